// base/log.h — structured logs, one line per record, key=value (logfmt)
// or JSON, as controller-runtime's zap logger writes them:
//
//   ts=2026-01-01T00:00:00.000000Z level=info msg="Released gate" pod=vms/virt-launcher-x
//   {"ts":"2026-01-01T00:00:00.000000Z","level":"info","msg":"Released gate","pod":"vms/..."}
//
// Messages are capitalised and in the past tense; objects are named by kind
// with "namespace/name" values. Thread-safe.
#pragma once

#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"

namespace kmt::base {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kText, kJson };

// "debug"/"info"/"error" → level; "text"/"json" → format. False on anything else.
bool ParseLogLevel(std::string_view s, LogLevel* out);
bool ParseLogFormat(std::string_view s, LogFormat* out);

using LogField = std::pair<std::string_view, std::string>;

class Logger {
 public:
  // `sink` receives each complete line (without the newline); default: stderr.
  Logger(const Clock& clock, LogLevel level, LogFormat format,
         std::function<void(const std::string&)> sink = {});

  void Log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields = {});
  void Debug(std::string_view msg, std::initializer_list<LogField> fields = {}) {
    Log(LogLevel::kDebug, msg, fields);
  }
  void Info(std::string_view msg, std::initializer_list<LogField> fields = {}) {
    Log(LogLevel::kInfo, msg, fields);
  }
  // Something failed and will be retried, or was worked around.
  void Warn(std::string_view msg, std::initializer_list<LogField> fields = {}) {
    Log(LogLevel::kWarn, msg, fields);
  }
  // Something failed and is not retried, or keeps failing.
  void Error(std::string_view msg, std::initializer_list<LogField> fields = {}) {
    Log(LogLevel::kError, msg, fields);
  }
  bool Enabled(LogLevel level) const { return level >= level_; }

  // The same with fields built at run time (another component's records, e.g. the
  // webhook server's).
  void Log(LogLevel level, std::string_view msg,
           const std::vector<std::pair<std::string, std::string>>& fields);

 private:
  template <typename Fields>
  void Emit(LogLevel level, std::string_view msg, const Fields& fields);

  const Clock& clock_;
  LogLevel level_;
  LogFormat format_;
  std::function<void(const std::string&)> sink_;
  std::mutex mu_;
};

// A Logger whose records all carry `fields` after their own (logr's WithValues): every line
// of one unit of work names it (one reconcile: its key and reconcile id). Refers to `log`,
// which outlives it.
class LogContext {
 public:
  LogContext(Logger& log, std::vector<std::pair<std::string, std::string>> fields)
      : log_(log), fields_(std::move(fields)) {}

  void Log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields = {}) const;
  void Debug(std::string_view msg, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kDebug, msg, fields);
  }
  void Info(std::string_view msg, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kInfo, msg, fields);
  }
  void Warn(std::string_view msg, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kWarn, msg, fields);
  }
  void Error(std::string_view msg, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kError, msg, fields);
  }

  // The fields every line carries, in order.
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

 private:
  Logger& log_;
  std::vector<std::pair<std::string, std::string>> fields_;
};

}  // namespace kmt::base
