// cmd/operator/component_logs_test.cc
#include "cmd/operator/component_logs.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/fake_clock.h"

namespace kmt::cmd {
namespace {

using V = std::vector<std::string>;

struct World {
  base::FakeClock clock;
  V lines;
  base::Logger log{clock, base::LogLevel::kDebug, base::LogFormat::kText,
                   [this](const std::string& l) { lines.push_back(l); }};
};

TEST_CASE("A server's records carry their component first, at error or info level") {
  World w;
  http::LogSink sink = ServerLog(w.log, "webhook");
  sink({false, "Loaded client CA", {{"file", "/ca/ca.crt"}, {"ca", "serial 7"}}});
  sink({true, "Failed to accept a connection", {{"error", "Too many open files"}}});
  CHECK(w.lines == V{"ts=2026-01-01T00:00:00.000000Z level=info msg=\"Loaded client CA\" "
                     "component=webhook file=/ca/ca.crt ca=\"serial 7\"",
                     "ts=2026-01-01T00:00:00.000000Z level=error msg=\"Failed to accept a "
                     "connection\" component=webhook error=\"Too many open files\""});
}

TEST_CASE("A record rendered without context keeps its own fields only") {
  World w;
  http::LogTo(w.log, {false, "Rejected admission request", {{"status", "400"}}});
  CHECK(w.lines == V{"ts=2026-01-01T00:00:00.000000Z level=info msg=\"Rejected admission "
                     "request\" status=400"});
}

TEST_CASE("A watch error is an error; a failed Lease call a warning naming the lease") {
  World w;
  WatchErrorLog(w.log)(kube::KubeError(kube::ErrorKind::kInternal, "projecting pods ns/a: x"));
  LeaseErrorLog(w.log, "migration-target-operator")("get lease", "connection refused");
  CHECK(w.lines == V{"ts=2026-01-01T00:00:00.000000Z level=error msg=\"Failed to watch\" "
                     "error=\"projecting pods ns/a: x\"",
                     "ts=2026-01-01T00:00:00.000000Z level=warn msg=\"Leader election: failed "
                     "to get lease\" lease=migration-target-operator error=\"connection "
                     "refused\""});
}

}  // namespace
}  // namespace kmt::cmd
