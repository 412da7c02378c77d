// base/log.cc
#include "base/log.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

namespace kmt::base {

bool ParseLogLevel(std::string_view s, LogLevel* out) {
  if (s == "debug") {
    *out = LogLevel::kDebug;
  } else if (s == "info") {
    *out = LogLevel::kInfo;
  } else if (s == "warn") {
    *out = LogLevel::kWarn;
  } else if (s == "error") {
    *out = LogLevel::kError;
  } else {
    return false;
  }
  return true;
}

bool ParseLogFormat(std::string_view s, LogFormat* out) {
  if (s == "text") {
    *out = LogFormat::kText;
  } else if (s == "json") {
    *out = LogFormat::kJson;
  } else {
    return false;
  }
  return true;
}

namespace {

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

// logfmt: bare when the value has no space, quote, '=' or control byte; else quoted.
std::string LogfmtValue(std::string_view v) {
  bool plain = !v.empty();
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(v);
  std::string out = "\"";
  for (char c : v) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// One log line: ts, level and msg first, then `fields` in order. JSON through
// nlohmann::ordered_json (keeps that order; dump() replaces invalid UTF-8 instead of
// throwing), text as logfmt.
template <typename Fields>
std::string RenderLine(LogFormat format, const std::string& ts, LogLevel level,
                       std::string_view msg, const Fields& fields) {
  if (format == LogFormat::kJson) {
    nlohmann::ordered_json j;
    j["ts"] = ts;
    j["level"] = LevelName(level);
    j["msg"] = std::string(msg);
    for (const auto& [k, v] : fields) j[std::string(k)] = v;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string line = "ts=" + ts + " level=" + LevelName(level) + " msg=" + LogfmtValue(msg);
  for (const auto& [k, v] : fields) line += " " + std::string(k) + "=" + LogfmtValue(v);
  return line;
}

}  // namespace

Logger::Logger(const Clock& clock, LogLevel level, LogFormat format,
               std::function<void(const std::string&)> sink)
    : clock_(clock), level_(level), format_(format), sink_(std::move(sink)) {
  if (!sink_) {
    sink_ = [](const std::string& line) {
      std::fputs((line + "\n").c_str(), stderr);
      std::fflush(stderr);
    };
  }
}

template <typename Fields>
void Logger::Emit(LogLevel level, std::string_view msg, const Fields& fields) {
  if (!Enabled(level)) return;
  const std::string line =
      RenderLine(format_, FormatMicroTime(clock_.WallNow()), level, msg, fields);
  std::scoped_lock lock(mu_);
  sink_(line);
}

void Logger::Log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) {
  Emit(level, msg, fields);
}

void Logger::Log(LogLevel level, std::string_view msg,
                 const std::vector<std::pair<std::string, std::string>>& fields) {
  Emit(level, msg, fields);
}

void LogContext::Log(LogLevel level, std::string_view msg,
                     std::initializer_list<LogField> fields) const {
  if (!log_.Enabled(level)) return;
  std::vector<std::pair<std::string, std::string>> all;
  all.reserve(fields.size() + fields_.size());
  for (const auto& [k, v] : fields) all.emplace_back(std::string(k), v);
  all.insert(all.end(), fields_.begin(), fields_.end());
  log_.Log(level, msg, all);
}

}  // namespace kmt::base
