#include "bench/live_admission.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

namespace kmt::bench {
namespace {

LoadResult Answered(std::vector<double> seconds, uint64_t errors = 0) {
  LoadResult r;
  r.sent = seconds.size() + errors;
  r.errors = errors;
  r.service_seconds = seconds;
  r.response_seconds = std::move(seconds);
  return r;
}

TEST_CASE("The ratio budget applies with the cache off at 50 and 200 req/s") {
  CHECK(LiveRatioBudgetApplies(false, 50));
  CHECK(LiveRatioBudgetApplies(false, 200));
  CHECK_FALSE(LiveRatioBudgetApplies(false, 400));
  CHECK_FALSE(LiveRatioBudgetApplies(true, 50));
}

TEST_CASE("Rows: latency against the floor, errors, CPU per 1,000 reviews") {
  LivePhase p;
  p.rate = 200;
  p.cache_on = false;
  p.op = Answered({0.002, 0.002, 0.003, 0.004}, 1);
  p.floor = Answered({0.001, 0.001, 0.002, 0.003});
  p.op_cpu_seconds = 0.004;
  p.apiserver_cpu_seconds_op = 0.008;
  p.apiserver_cpu_seconds_floor = 0.004;
  const std::vector<Row> rows = LiveAdmissionRows(p);
  REQUIRE(rows.size() == 6);
  CHECK(rows[0].figure == "p50 (SAR cache off) at 200 req/s");
  CHECK(rows[0].value == "2.00 ms");
  CHECK(rows[0].floor == "1.00 ms");
  CHECK(rows[1].value == "4.00 ms");
  CHECK(rows[1].ratio == "1.33×");
  CHECK(rows[1].budget == "≤ 1.2× floor");
  CHECK(rows[1].pass == false);
  CHECK(rows[2].figure ==
        "p99 from due time (incl. waiting for a connection) (SAR cache off) at 200 req/s");
  CHECK(rows[2].value == "4.00 ms");
  CHECK(rows[3].value == "1 / 5");
  CHECK(rows[3].floor == "0 / 4");
  CHECK(rows[3].pass == false);
  CHECK(rows[4].value == "1.00 s");  // 4 ms over 4 answered reviews, ×1,000
  CHECK(rows[5].value == "2.00 s");
  CHECK(rows[5].floor == "1.00 s");
  CHECK(rows[5].ratio == "2.00×");
}

TEST_CASE("Rows of a run where nothing was answered still hold a value") {
  LivePhase p;
  p.rate = 800;
  p.op = Answered({}, 10);
  p.floor = Answered({0.001});
  for (const Row& r : LiveAdmissionRows(p)) {
    CAPTURE(r.figure);
    CHECK_FALSE(r.value.empty());
  }
  CHECK(LiveAdmissionRows(p)[1].budget.empty());  // cache on: no ratio budget
  CHECK(LiveAdmissionRows(p)[3].pass == false);
}

TEST_CASE("Idle rows: CPU per second of wall time") {
  const std::vector<Row> rows = LiveIdleRows(
      {.cache_on = false, .seconds = 2, .op_cpu_seconds = 0.02, .apiserver_cpu_seconds = 0.1});
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].figure == "operator CPU per second, no load (SAR cache off)");
  CHECK(rows[0].value == "10.0 ms");
  CHECK(rows[1].value == "50.0 ms");
  CHECK(LiveIdleRows({}).front().value == "not measured");
}

TEST_CASE("utime + stime from /proc/PID/stat, a comm with spaces and parentheses") {
  const std::string stat =
      "4242 (kube (api) server) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 567 0 0 20 0 12 0 "
      "100 2000000 3000 18446744073709551615";
  CHECK(ParseProcStatTicks(stat) == 1234ULL + 567ULL);
  CHECK_FALSE(ParseProcStatTicks("4242 (x) S 1 2").has_value());
  CHECK_FALSE(ParseProcStatTicks("garbage").has_value());
  CHECK(ProcessCpuSeconds(getpid()) >= 0);
}

TEST_CASE("kube-apiserver is recognised by its binary and --secure-port") {
  using namespace std::string_literals;
  CHECK(IsApiserverCommandLine("/bin/kube-apiserver\0--v\0001\0--secure-port\00030443\0"s, 30443));
  CHECK(IsApiserverCommandLine("kube-apiserver\0--secure-port=30443\0"s, 30443));
  CHECK_FALSE(IsApiserverCommandLine("/bin/kube-apiserver\0--secure-port\00026443\0"s, 30443));
  CHECK_FALSE(IsApiserverCommandLine("/bin/etcd\0--secure-port=30443\0"s, 30443));
  CHECK_FALSE(IsApiserverCommandLine(""s, 30443));
}

TEST_CASE("The API server's host and port from the kubeconfig's server") {
  CHECK(ServerPort("https://127.0.0.1:30443") == 30443);
  CHECK(ServerPort("https://127.0.0.1:30443/") == 30443);
  CHECK(ServerPort("https://[::1]:6443") == 6443);
  CHECK_FALSE(ServerPort("https://example").has_value());
  CHECK_FALSE(ServerPort("https://[::1]").has_value());
  CHECK(ServerHost("https://127.0.0.1:30443") == "127.0.0.1");
  CHECK(ServerHost("https://[::1]:6443") == "::1");
  CHECK(ServerHost("https://localhost") == "localhost");
}

}  // namespace
}  // namespace kmt::bench
