// cmd/operator/operator_test.cc — the whole process over the in-memory API
// server: probes, leader election, caches, workers, shutdown. Real threads and
// real time, so waits are bounded polls on state.
#include "cmd/operator/operator.h"

#include <httplib.h>

#include <catch2/catch.hpp>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "base/clock.h"
#include "base/poll.h"
#include "controller/testing/objects.h"
#include "http/testing/test_tls.h"
#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::cmd {
namespace {

using namespace kmt::controller::testing;  // NOLINT: test fixtures

// Threads do the work here: wait for its effect, bounded.
template <typename F>
bool Eventually(F&& f) {
  return controller::testing::Eventually(std::forward<F>(f), std::chrono::seconds(30));
}

// A replica running the controller alone (no webhook), elected through a Lease in
// kmt-system, its probe and metrics ports off; tests change what they need.
OperatorFlags ControllerReplicaFlags() {
  OperatorFlags flags;
  flags.disable_webhook = true;
  flags.leader_election_namespace = "kmt-system";
  flags.health_probe_bind_address = "0";
  flags.metrics_bind_address = "0";
  return flags;
}

TEST_CASE("The operator leads, releases gates, serves probes and releases the lease on stop") {
  kube::FakeClient client;
  base::RealClock clock;
  std::mutex mu;
  std::vector<std::string> lines;
  base::Logger log(clock, base::LogLevel::kInfo, base::LogFormat::kJson, [&](const std::string& l) {
    std::scoped_lock lock(mu);
    lines.push_back(l);
  });

  json created = client.Create(kube::kVirtualMachineInstanceMigrations, kNs,
                               Stripped(Vmim({NodeTerm("node-3")})));
  client.Create(kube::kPods, kNs, Stripped(Pod({.job_uid = created["metadata"]["uid"]})));

  OperatorFlags flags = ControllerReplicaFlags();
  flags.health_probe_bind_address = "127.0.0.1:0";
  flags.metrics_bind_address = "127.0.0.1:0";
  flags.metrics_secure = false;  // plain HTTP (the secure port has a test of its own)
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
  // The worker records its metrics after the patch it sent returned, and the gauges read the
  // informer cache, which sees the released pod once its watch event arrives: poll, don't race.
  httplib::Client metrics("127.0.0.1", op.metrics_port());
  std::string body;
  CHECK(Eventually([&] {
    auto m = metrics.Get("/metrics");
    if (!m) return false;
    body = m->body;
    return body.find("kmt_gate_release_seconds_count 1\n") != std::string::npos &&
           body.find("kmt_gated_target_pods 0\n") != std::string::npos;
  }));
  CAPTURE(body);
  CHECK(body.find("controller_runtime_reconcile_total{controller=\"vmim\",result=\"success\"}") !=
        std::string::npos);
  // The state gauges, read at scrape time: ready, leading, and nothing waits any more.
  CHECK(body.find("kmt_operator_ready 1\n") != std::string::npos);
  CHECK(body.find("leader_election_master_status{name=\"migration-target-operator\"} 1\n") !=
        std::string::npos);
  CHECK(body.find("kmt_gated_target_pods 0\n") != std::string::npos);

  op.RequestStop();
  CHECK(op.Run() == 0);
  lease = client.Get(kube::kLeases, "kmt-system", "migration-target-operator");
  CHECK(lease["spec"]["holderIdentity"] == "");
  CHECK(lease["spec"]["leaseDurationSeconds"] == 1);
  std::scoped_lock lock(mu);
  bool released = false;
  for (const auto& l : lines) {
    released =
        released || (l.find(R"("msg":"Released gate")") != std::string::npos &&
                     l.find(R"("pod":"vms/virt-launcher-vm-1-target")") != std::string::npos);
  }
  CHECK(released);
}

TEST_CASE("With a shutdown delay the replica drains first: not ready, still leading, then stops") {
  kube::FakeClient client;
  base::RealClock clock;
  std::mutex mu;
  std::vector<std::string> lines;
  base::Logger log(clock, base::LogLevel::kInfo, base::LogFormat::kJson, [&](const std::string& l) {
    std::scoped_lock lock(mu);
    lines.push_back(l);
  });
  OperatorFlags flags = ControllerReplicaFlags();
  flags.health_probe_bind_address = "127.0.0.1:0";
  flags.shutdown_delay_ms = 1500;
  Operator op(flags, client, log, {"replica-a", ""});
  op.Start();
  REQUIRE(Eventually([&] { return op.Ready() && op.Leading(); }));
  httplib::Client health("127.0.0.1", op.health_port());
  auto before = health.Get("/readyz?verbose");
  REQUIRE(before);
  CHECK(before->status == 200);
  CHECK(before->body.find("[+]not-shutting-down ok\n") != std::string::npos);

  op.RequestStop();
  const base::Stopwatch stop_requested(clock);
  auto run = std::async(std::launch::async, [&] { return op.Run(); });
  // Draining: /readyz fails, the Lease is still held.
  REQUIRE(Eventually([&] {
    auto r = health.Get("/readyz?verbose");
    return r && r->status != 200 && r->body.find("[-]not-shutting-down") != std::string::npos;
  }));
  CHECK_FALSE(op.Ready());
  CHECK(op.Leading());
  CHECK(client.Get(kube::kLeases, "kmt-system",
                   "migration-target-operator")["spec"]["holderIdentity"] == "replica-a");
  CHECK(run.get() == 0);
  CHECK(stop_requested.Elapsed() >= std::chrono::milliseconds(1500));
  CHECK(client.Get(kube::kLeases, "kmt-system",
                   "migration-target-operator")["spec"]["holderIdentity"] == "");
  std::scoped_lock lock(mu);
  bool drained = false;
  for (const auto& l : lines) {
    drained = drained || (l.find(R"("msg":"Draining before stopping")") != std::string::npos &&
                          l.find(R"("delay":"1500ms")") != std::string::npos);
  }
  CHECK(drained);
}

TEST_CASE("Metrics are HTTPS for authenticated, authorized scrapers only by default") {
  kube::FakeClient client;
  client.SetCreateHandler(kube::kTokenReviews, [](const json& review) {
    json answer = review;
    const bool known =
        review["spec"]["token"] == "scraper-token" || review["spec"]["token"] == "other-token";
    answer["status"] = {{"authenticated", known}};
    if (known) {
      answer["status"]["user"] = {
          {"username", review["spec"]["token"] == "scraper-token" ? "scraper" : "other"}};
    }
    return answer;
  });
  client.SetCreateHandler(kube::kSubjectAccessReviews, [](const json& review) {
    json answer = review;
    answer["status"] = {
        {"allowed", review["spec"]["user"] == "scraper" &&
                        review["spec"]["nonResourceAttributes"]["path"] == "/metrics" &&
                        review["spec"]["nonResourceAttributes"]["verb"] == "get"}};
    return answer;
  });
  http::testing::TestAuthority ca;
  const std::string dir = http::testing::MakeTempDir();
  const auto pair = ca.Issue(3);
  http::testing::WriteFileAtomically(dir + "/tls.key", pair.key);
  http::testing::WriteFileAtomically(dir + "/tls.crt", pair.cert);
  http::testing::WriteFileAtomically(dir + "/ca.crt", ca.ca_pem());

  base::RealClock clock;
  base::Logger log(clock, base::LogLevel::kError, base::LogFormat::kText,
                   [](const std::string&) {});
  OperatorFlags flags = ControllerReplicaFlags();
  flags.metrics_bind_address = "127.0.0.1:0";
  flags.metrics_cert_path = dir;
  REQUIRE(flags.metrics_secure);
  Operator op(flags, client, log, {"replica-a", ""});
  op.Start();
  REQUIRE(Eventually([&] { return op.Leading(); }));

  httplib::SSLClient cli("127.0.0.1", op.metrics_port());
  cli.set_ca_cert_path((dir + "/ca.crt").c_str());
  cli.enable_server_certificate_verification(true);
  cli.set_read_timeout(10, 0);
  auto status_of = [&](const char* token) {
    auto r = token ? cli.Get("/metrics", {{"Authorization", std::string("Bearer ") + token}})
                   : cli.Get("/metrics");
    return r ? r->status : -1;
  };
  CHECK(status_of(nullptr) == 401);
  CHECK(status_of("forged") == 401);
  CHECK(status_of("other-token") == 403);
  auto page = cli.Get("/metrics", {{"Authorization", "Bearer scraper-token"}});
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("leader_election_master_status{name=\"migration-target-operator\"} 1\n") !=
        std::string::npos);
  // Plain HTTP on that port is no way in.
  httplib::Client plain("127.0.0.1", op.metrics_port());
  plain.set_read_timeout(3, 0);
  auto p = plain.Get("/metrics");
  CHECK((!p || p->body.find("leader_election_master_status") == std::string::npos));
  op.RequestStop();
  CHECK(op.Run() == 0);
}

TEST_CASE("A second replica waits as a warm standby, ready but not leading") {
  kube::FakeClient client;
  base::RealClock clock;
  base::Logger log(clock, base::LogLevel::kError, base::LogFormat::kText,
                   [](const std::string&) {});
  OperatorFlags flags = ControllerReplicaFlags();
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

// The caches a replica listed and watched, by what they are: "nodes", "vmims", "target pods",
// "bound pods", "policies", "vmis", or the resource's name for anything else.
std::set<std::string> ListedAndWatched(const kube::FakeClient& client) {
  std::set<std::string> out;
  for (const kube::FakeCall& c : client.Calls()) {
    if (c.verb != kube::Verb::kList && c.verb != kube::Verb::kWatch) continue;
    if (c.resource == "pods") {
      out.insert(!c.field_selector.empty() ? "bound pods"
                 : c.label_selector.find("kubevirt.io/migrationJobUID") != std::string::npos
                     ? "target pods"
                     : "pods");
    } else if (c.resource == "nodes") {
      out.insert("nodes");
    } else if (c.resource == "virtualmachineinstancemigrations.kubevirt.io") {
      out.insert("vmims");
    } else if (c.resource == "migrationtargetpolicies.migration-target.kubevirt.io") {
      out.insert("policies");
    } else if (c.resource == "virtualmachineinstances.kubevirt.io") {
      out.insert("vmis");
    } else {
      out.insert(c.resource);
    }
  }
  return out;
}

TEST_CASE("A webhook-only replica lists and watches only VMIs, and is ready without them") {
  kube::FakeClient client;
  // The VMI cache (the placement warnings' VMI nodes) cannot list: readiness does not wait.
  client.FailNext(kube::Verb::kList, 1'000'000, kube::ErrorKind::kUnavailable,
                  "virtualmachineinstances.kubevirt.io");
  base::RealClock clock;
  base::Logger log(clock, base::LogLevel::kError, base::LogFormat::kText,
                   [](const std::string&) {});
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir =
      std::filesystem::path(tmp != nullptr ? tmp : "/tmp") / "webhook-only-certs";
  std::filesystem::remove_all(dir);
  OperatorFlags flags;
  flags.disable_controller = true;
  flags.webhook_port = 0;
  flags.webhook_cert_mode = "self";
  flags.webhook_cert_dir = dir.string();
  flags.webhook_cert_hosts = {"127.0.0.1"};
  flags.health_probe_bind_address = "0";
  flags.metrics_bind_address = "0";
  Operator op(flags, client, log, {"replica-a", "kmt-system"});
  op.Start();
  REQUIRE(Eventually([&] { return op.Ready(); }));  // its certificate written and loaded
  REQUIRE(Eventually([&] { return !ListedAndWatched(client).empty(); }));
  CHECK(ListedAndWatched(client) == std::set<std::string>{"vmis"});
  op.RequestStop();
  CHECK(op.Run() == 0);
}

TEST_CASE("A follower keeps the standby caches: no bound pods, no policies") {
  kube::FakeClient client;
  const std::string now = base::FormatMicroTime(base::SystemClock().WallNow());
  client.Create(kube::kLeases, "kmt-system",
                {{"apiVersion", "coordination.k8s.io/v1"},
                 {"kind", "Lease"},
                 {"metadata", {{"name", "migration-target-operator"}, {"namespace", "kmt-system"}}},
                 {"spec",
                  {{"holderIdentity", "another-replica"},
                   {"leaseDurationSeconds", 3600},
                   {"acquireTime", now},
                   {"renewTime", now}}}});
  base::RealClock clock;
  base::Logger log(clock, base::LogLevel::kError, base::LogFormat::kText,
                   [](const std::string&) {});
  OperatorFlags flags = ControllerReplicaFlags();
  Operator op(flags, client, log, {"replica-b", ""});
  op.Start();
  REQUIRE(Eventually([&] { return op.Ready(); }));
  CHECK_FALSE(op.Leading());
  CHECK(ListedAndWatched(client) == std::set<std::string>{"nodes", "target pods", "vmims"});
  op.RequestStop();
  CHECK(op.Run() == 0);
}

// Holds back every LIST of bound pods until Open().
class BoundPodListGate {
 public:
  ~BoundPodListGate() { Open(); }
  void Hook(const kube::FakeCall& c) {
    if (c.resource != "pods" || c.verb != kube::Verb::kList || c.field_selector.empty()) return;
    std::unique_lock<std::mutex> lock(mu_);
    ++held_;
    cv_.wait_for(lock, std::chrono::seconds(30), [this] { return open_; });
  }
  void Open() {
    std::scoped_lock lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int Held() {
    std::scoped_lock lock(mu_);
    return held_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int held_ = 0;
};

TEST_CASE("Without leader election the replica is ready before its bound pods are listed") {
  BoundPodListGate gate;
  kube::FakeClient client;
  client.SetCallHook([&gate](const kube::FakeCall& c) { gate.Hook(c); });
  base::RealClock clock;
  base::Logger log(clock, base::LogLevel::kError, base::LogFormat::kText,
                   [](const std::string&) {});
  OperatorFlags flags;
  flags.disable_webhook = true;
  flags.leader_elect = false;
  flags.health_probe_bind_address = "0";
  flags.metrics_bind_address = "0";
  Operator op(flags, client, log, {"replica-a", ""});
  op.Start();
  // Ready on the VMIM, target-pod and node caches, while the bound pods' LIST is held back;
  // the leader lists them once those have synced.
  REQUIRE(Eventually([&] { return op.Ready() && op.Leading(); }));
  CHECK(Eventually([&] { return gate.Held() == 1; }));
  CHECK(op.Ready());
  gate.Open();
  op.RequestStop();
  CHECK(op.Run() == 0);
}

TEST_CASE("Leader election outside a pod needs a namespace") {
  kube::FakeClient client;
  base::RealClock clock;
  base::Logger log(clock, base::LogLevel::kError, base::LogFormat::kText,
                   [](const std::string&) {});
  OperatorFlags flags;
  flags.disable_webhook = true;
  flags.health_probe_bind_address = "0";
  flags.metrics_bind_address = "0";
  Operator op(flags, client, log, {"replica-a", ""});
  CHECK_THROWS_WITH(op.Start(),
                    "leader election needs a namespace: not running in a pod, so pass "
                    "--leader-election-namespace (or --leader-elect=false)");
}

// A slow API server during a certificate check: the bootstrap's Secret reads hang (as a
// read that waits out the client's 30 s timeout would) from the `block_from`-th read on,
// until Open(); the reads before it fail at once. Meanwhile it counts the lease renewals
// (PUTs of the Lease), which must keep coming every retry period (2 s) because the
// certificate checks run on a thread of their own.
class SlowCertificateApi {
 public:
  explicit SlowCertificateApi(int block_from) : block_from_(block_from) {}
  ~SlowCertificateApi() { Open(); }

  void Hook(const kube::FakeCall& call) {
    std::unique_lock<std::mutex> lock(mu_);
    if (call.resource == "leases.coordination.k8s.io" && call.verb == kube::Verb::kUpdate) {
      ++renewals_;
      return;
    }
    if (call.resource != "secrets") return;
    if (++secret_reads_ < block_from_) {
      throw kube::KubeError(kube::ErrorKind::kTimeout, "get secrets: injected timeout");
    }
    ++blocked_;
    cv_.wait_for(lock, std::chrono::seconds(60), [this] { return open_; });
    --blocked_;
  }
  void Open() {
    std::scoped_lock lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool Blocked() {
    std::scoped_lock lock(mu_);
    return blocked_ > 0;
  }
  int Renewals() {
    std::scoped_lock lock(mu_);
    return renewals_;
  }

 private:
  const int block_from_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int secret_reads_ = 0;
  int blocked_ = 0;
  int renewals_ = 0;
};

// The leader keeps renewing while a certificate check hangs on the API server; once the
// API answers again the certificate is written and loaded.
void CheckRenewalsWhileCertificateCheckHangs(int block_from, const std::string& dir_name) {
  kube::FakeClient client;
  SlowCertificateApi api(block_from);
  client.SetCallHook([&api](const kube::FakeCall& c) { api.Hook(c); });
  base::RealClock clock;
  base::Logger log(clock, base::LogLevel::kError, base::LogFormat::kText,
                   [](const std::string&) {});
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir = std::filesystem::path(tmp != nullptr ? tmp : "/tmp") / dir_name;
  std::filesystem::remove_all(dir);

  OperatorFlags flags;
  flags.webhook_port = 0;
  flags.webhook_cert_mode = "self";
  flags.webhook_cert_dir = dir.string();
  flags.webhook_cert_hosts = {"127.0.0.1"};
  flags.leader_election_namespace = "kmt-system";
  flags.health_probe_bind_address = "0";
  flags.metrics_bind_address = "0";
  Operator op(flags, client, log, {"replica-a", "kmt-system"});
  // Start() on a thread of its own: it must not wait for the certificate either, but if it
  // does (it did), the test reports the missing renewals instead of hanging.
  std::thread starter([&op] { op.Start(); });

  REQUIRE(Eventually([&] { return api.Blocked(); }));
  const int renewals_before = api.Renewals();
  // Two renewals take ~4 s; 12 s is past the renew deadline (10 s), where a leader whose
  // renewals wait for the certificate check has lost its lease.
  const bool renewed = controller::testing::Eventually(
      [&] { return api.Renewals() >= renewals_before + 2; }, std::chrono::seconds(12));
  const bool still_blocked = api.Blocked();
  const bool leading = op.Leading();
  api.Open();
  starter.join();
  CHECK(still_blocked);  // the renewals happened during the hanging certificate check
  CHECK(renewed);
  CHECK(leading);
  CHECK(Eventually([&] { return op.Ready(); }));  // certificate written and loaded
  CHECK(std::filesystem::exists(dir / "tls.crt"));
  op.RequestStop();
  CHECK(op.Run() == 0);  // leadership was never lost
}

TEST_CASE("A hanging certificate check at start never delays the Lease renewals") {
  CheckRenewalsWhileCertificateCheckHangs(/*block_from=*/1, "certs-first-pass");
}

TEST_CASE("A hanging certificate retry never delays the Lease renewals") {
  // The first pass fails at once; its retry 10 s later hangs while the replica leads.
  CheckRenewalsWhileCertificateCheckHangs(/*block_from=*/2, "certs-retry");
}

}  // namespace
}  // namespace kmt::cmd
