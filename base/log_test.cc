// base/log_test.cc
#include "base/log.h"

#include <catch2/catch.hpp>
#include <vector>

#include "base/fake_clock.h"

namespace kmt::base {
namespace {

TEST_CASE("Text logs are logfmt with quoting where needed") {
  FakeClock clock;
  std::vector<std::string> lines;
  Logger log(clock, LogLevel::kInfo, LogFormat::kText,
             [&](const std::string& l) { lines.push_back(l); });
  log.Info("Released gate", {{"pod", "vms/virt-launcher-a"}, {"vmim", "vms/mig-1"}});
  log.Error("Failed to patch pod", {{"error", "the \"test\" op failed\nline2"}, {"empty", ""}});
  log.Debug("Not shown");
  REQUIRE(lines == std::vector<std::string>{
                       "ts=2026-01-01T00:00:00.000000Z level=info msg=\"Released gate\" "
                       "pod=vms/virt-launcher-a vmim=vms/mig-1",
                       "ts=2026-01-01T00:00:00.000000Z level=error msg=\"Failed to patch pod\" "
                       "error=\"the \\\"test\\\" op failed\\nline2\" empty=\"\""});
}

TEST_CASE("warn sits between info and error") {
  FakeClock clock;
  std::vector<std::string> lines;
  Logger log(clock, LogLevel::kWarn, LogFormat::kText,
             [&](const std::string& l) { lines.push_back(l); });
  log.Info("Released gate");
  log.Warn("Failed to release gate", {{"error", "timeout"}});
  log.Error("Dropped event");
  REQUIRE(lines == std::vector<std::string>{
                       "ts=2026-01-01T00:00:00.000000Z level=warn msg=\"Failed to release gate\" "
                       "error=timeout",
                       "ts=2026-01-01T00:00:00.000000Z level=error msg=\"Dropped event\""});
}

TEST_CASE("JSON logs keep ts, level, msg first and survive bad UTF-8") {
  FakeClock clock;
  std::vector<std::string> lines;
  Logger log(clock, LogLevel::kDebug, LogFormat::kJson,
             [&](const std::string& l) { lines.push_back(l); });
  log.Debug("Started workers", {{"count", "2"}, {"bad", std::string("a\xff")}});
  REQUIRE(lines == std::vector<std::string>{
                       "{\"ts\":\"2026-01-01T00:00:00.000000Z\",\"level\":\"debug\",\"msg\":"
                       "\"Started workers\",\"count\":\"2\",\"bad\":\"a\xEF\xBF\xBD\"}"});
}

TEST_CASE("Fields built at run time (the webhook server's records) render the same way") {
  FakeClock clock;
  std::vector<std::string> lines;
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"component", "webhook"}, {"cert", "/c/tls.crt"}, {"detail", "a \"b\""}};
  Logger text(clock, LogLevel::kInfo, LogFormat::kText,
              [&](const std::string& l) { lines.push_back(l); });
  text.Log(LogLevel::kInfo, "Loaded serving certificate", fields);
  text.Log(LogLevel::kDebug, "hidden", fields);
  Logger js(clock, LogLevel::kInfo, LogFormat::kJson,
            [&](const std::string& l) { lines.push_back(l); });
  js.Log(LogLevel::kInfo, "Loaded serving certificate", fields);
  REQUIRE(lines == std::vector<std::string>{
                       "ts=2026-01-01T00:00:00.000000Z level=info msg=\"Loaded serving "
                       "certificate\" component=webhook cert=/c/tls.crt detail=\"a \\\"b\\\"\"",
                       "{\"ts\":\"2026-01-01T00:00:00.000000Z\",\"level\":\"info\",\"msg\":"
                       "\"Loaded serving certificate\",\"component\":\"webhook\",\"cert\":\"/c/"
                       "tls.crt\",\"detail\":\"a \\\"b\\\"\"}"});
}

TEST_CASE("Level and format flags parse") {
  LogLevel l = LogLevel::kInfo;
  LogFormat f = LogFormat::kText;
  REQUIRE(ParseLogLevel("debug", &l));
  REQUIRE(l == LogLevel::kDebug);
  REQUIRE(ParseLogLevel("warn", &l));
  REQUIRE(l == LogLevel::kWarn);
  REQUIRE_FALSE(ParseLogLevel("verbose", &l));
  REQUIRE(ParseLogFormat("json", &f));
  REQUIRE(f == LogFormat::kJson);
  REQUIRE_FALSE(ParseLogFormat("yaml", &f));
}

TEST_CASE("A LogContext's fields follow every record's own, at the logger's level") {
  FakeClock clock;
  std::vector<std::string> lines;
  Logger log(clock, LogLevel::kInfo, LogFormat::kText,
             [&](const std::string& l) { lines.push_back(l); });
  const LogContext reconcile(log, {{"vmim", "vms/mig-1"}, {"reconcile_id", "7"}});
  reconcile.Info("Released gate", {{"pod", "vms/virt-launcher-a"}});
  reconcile.Debug("Not shown");
  reconcile.Warn("Failed to delete target pod");
  REQUIRE(lines == std::vector<std::string>{
                       "ts=2026-01-01T00:00:00.000000Z level=info msg=\"Released gate\" "
                       "pod=vms/virt-launcher-a vmim=vms/mig-1 reconcile_id=7",
                       "ts=2026-01-01T00:00:00.000000Z level=warn msg=\"Failed to delete target "
                       "pod\" vmim=vms/mig-1 reconcile_id=7"});
}

}  // namespace
}  // namespace kmt::base
