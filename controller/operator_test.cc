// controller/operator_test.cc — the whole process over the in-memory API
// server: probes, leader election, caches, workers, shutdown. Real threads and
// real time, so waits are bounded polls on state.
#include "controller/operator.h"

#include <httplib.h>

#include <catch2/catch.hpp>
#include <thread>

#include "controller/clock.h"
#include "controller/testing/objects.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::controller {
namespace {

using namespace kmt::controller::testing;  // NOLINT: test fixtures

// Threads do the work here: wait for its effect, bounded.
template <typename F>
bool Eventually(F&& f) {
  return testing::Eventually(std::forward<F>(f), std::chrono::seconds(30));
}

TEST_CASE("The operator leads, releases gates, serves probes and releases the lease on stop") {
  kube::FakeClient client;
  RealClock clock;
  std::mutex mu;
  std::vector<std::string> lines;
  Logger log(clock, LogLevel::kInfo, LogFormat::kJson, [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(l);
  });

  json created = client.Create(kube::kVirtualMachineInstanceMigrations, kNs,
                               Stripped(Vmim({NodeTerm("node-3")})));
  client.Create(kube::kPods, kNs, Stripped(Pod({.job_uid = created["metadata"]["uid"]})));

  OperatorFlags flags;
  flags.disable_webhook = true;
  flags.leader_election_namespace = "kmt-system";
  flags.health_probe_bind_address = "127.0.0.1:0";
  flags.metrics_bind_address = "127.0.0.1:0";
  Operator op(flags, client, log, {"replica-a", ""});
  op.Start();

  REQUIRE(Eventually([&] { return op.Ready() && op.Leading(); }));
  REQUIRE(Eventually([&] {
    json pod = client.Get(kube::kPods, kNs, kPodName);
    return pod["spec"].value("schedulingGates", json::array()).empty();
  }));
  json lease = client.Get(kube::kLeases, "kmt-system", "migration-target-operator");
  CHECK(lease["spec"]["holderIdentity"] == "replica-a");

  httplib::Client health("127.0.0.1", op.health_port());
  auto ready = health.Get("/readyz?verbose");
  REQUIRE(ready);
  CHECK(ready->status == 200);
  CHECK(ready->body == "[+]informers-synced ok\nhealthz check passed\n");
  // The worker records its metrics after the patch it sent returned: poll, don't race.
  httplib::Client metrics("127.0.0.1", op.metrics_port());
  std::string body;
  CHECK(Eventually([&] {
    auto m = metrics.Get("/metrics");
    if (!m) return false;
    body = m->body;
    return body.find("kmt_gate_release_seconds_count 1\n") != std::string::npos;
  }));
  CAPTURE(body);
  CHECK(body.find("controller_runtime_reconcile_total{controller=\"vmim\",result=\"success\"}") !=
        std::string::npos);

  op.RequestStop();
  CHECK(op.Run() == 0);
  lease = client.Get(kube::kLeases, "kmt-system", "migration-target-operator");
  CHECK(lease["spec"]["holderIdentity"] == "");
  CHECK(lease["spec"]["leaseDurationSeconds"] == 1);
  std::lock_guard<std::mutex> lock(mu);
  bool released = false;
  for (const auto& l : lines) {
    released =
        released || (l.find("\"msg\":\"Released gate\"") != std::string::npos &&
                     l.find("\"pod\":\"vms/virt-launcher-vm-1-target\"") != std::string::npos);
  }
  CHECK(released);
}

TEST_CASE("A second replica waits as a warm standby, ready but not leading") {
  kube::FakeClient client;
  RealClock clock;
  Logger log(clock, LogLevel::kError, LogFormat::kText, [](const std::string&) {});
  OperatorFlags flags;
  flags.disable_webhook = true;
  flags.leader_election_namespace = "kmt-system";
  flags.health_probe_bind_address = "0";
  flags.metrics_bind_address = "0";
  Operator a(flags, client, log, {"replica-a", ""});
  a.Start();
  REQUIRE(Eventually([&] { return a.Leading(); }));
  Operator b(flags, client, log, {"replica-b", ""});
  b.Start();
  REQUIRE(Eventually([&] { return b.Ready(); }));
  CHECK_FALSE(b.Leading());
  b.RequestStop();
  CHECK(b.Run() == 0);
  a.RequestStop();
  CHECK(a.Run() == 0);
}

TEST_CASE("Leader election outside a pod needs a namespace") {
  kube::FakeClient client;
  RealClock clock;
  Logger log(clock, LogLevel::kError, LogFormat::kText, [](const std::string&) {});
  OperatorFlags flags;
  flags.disable_webhook = true;
  flags.health_probe_bind_address = "0";
  flags.metrics_bind_address = "0";
  Operator op(flags, client, log, {"replica-a", ""});
  CHECK_THROWS_WITH(op.Start(),
                    "leader election needs a namespace: not running in a pod, so pass "
                    "--leader-election-namespace (or --leader-elect=false)");
}

}  // namespace
}  // namespace kmt::controller
