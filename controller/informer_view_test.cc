// controller/informer_view_test.cc — the caches feeding the controller, over
// the in-memory API server with real informer threads. Waits are bounded
// polls on state, never fixed sleeps.
#include "controller/informer_view.h"

#include <catch2/catch.hpp>
#include <thread>

#include "controller/fake_clock.h"
#include "controller/testing/objects.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::controller {
namespace {

using namespace kmt::controller::testing;  // NOLINT: test fixtures

// Threads do the work here: wait for its effect, bounded.
template <typename F>
bool Eventually(F&& f) {
  return testing::Eventually(std::forward<F>(f), std::chrono::seconds(20));
}

TEST_CASE("Cache events enqueue the VMIM; the loop releases the gate from the caches") {
  FakeClock clock;
  kube::FakeClient client{kube::FakeClient::Options{10000, [&] { return clock.WallNow(); }}};
  std::vector<std::string> lines;
  Logger log{clock, LogLevel::kInfo, LogFormat::kText, [&](const std::string& l) {
               static std::mutex mu;
               std::lock_guard<std::mutex> lock(mu);
               lines.push_back(l);
             }};
  Registry registry;
  OperatorMetrics metrics{registry, "vmim"};
  KubeEventRecorder events{client, clock, log, "operator-0"};

  // A VMIM with a term, one without (never enqueued), its gated target pod, nodes.
  json vmim = Stripped(Vmim({NodeTerm("node-3")}));
  json created = client.Create(kube::kVirtualMachineInstanceMigrations, kNs, vmim);
  const std::string uid = created["metadata"]["uid"];
  json plain = Stripped(Vmim({}));
  plain["metadata"]["name"] = "plain";
  client.Create(kube::kVirtualMachineInstanceMigrations, kNs, plain);
  json pod = Stripped(Pod({.job_uid = uid}));
  const std::string pod_uid = client.Create(kube::kPods, kNs, pod)["metadata"]["uid"];
  client.Create(kube::kNodes, "", Node({"node-1"}));
  client.Create(kube::kNodes, "", Node({"node-3"}));

  InformerView view(client, clock);
  Controller controller(view, client, clock, log, metrics, events);
  view.Connect(controller);
  view.Start();
  REQUIRE(view.WaitForSync(std::chrono::seconds(20)));
  REQUIRE(view.sizes().vmims == 2);
  REQUIRE(view.sizes().target_pods == 1);
  REQUIRE(view.sizes().nodes == 2);
  REQUIRE(view.sizes().bound_pods == 0);

  // The VMIM's add and its pod's add collapse into one key.
  REQUIRE(Eventually([&] { return view.TargetPodSeenAt(pod_uid).has_value(); }));
  REQUIRE(Eventually([&] { return controller.queue().Len() == 1; }));
  clock.Advance(std::chrono::milliseconds(40));
  REQUIRE(controller.ProcessNext() == ReconcileResult::kSuccess);
  json after = client.Get(kube::kPods, kNs, kPodName);
  CHECK(after["spec"].value("schedulingGates", json::array()).empty());
  CHECK(registry.Render().find("kmt_gate_release_seconds_bucket{le=\"0.05\"} 1\n") !=
        std::string::npos);

  // The pod's update comes back through the cache: the next pass is a no-op.
  REQUIRE(Eventually([&] {
    auto pods = view.TargetPods(kNs, uid);
    auto v = view.Migration(kNs, kVmimName);
    return pods.size() == 1 && !pods[0].has_gate && v && v->conditions.size() == 1;
  }));
  REQUIRE(Eventually([&] { return controller.queue().Len() == 1; }));
  const int64_t rv = client.ResourceVersion();
  REQUIRE(controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK(client.ResourceVersion() == rv);

  CHECK(view.Migration(kNs, "plain").has_value());
  CHECK_FALSE(view.Migration(kNs, "missing").has_value());
  CHECK(view.TargetPods("other-ns", uid).empty());
  view.Stop();
  controller.Stop();
}

TEST_CASE("Only node changes that matter to scheduling count") {
  api::NodeInfo base = api::NodeInfo::FromJson(Node({"node-1", {{"zone", "a"}}}));
  struct Row {
    std::string name;
    json node;
    bool matters;
  };
  json same = Node({"node-1", {{"zone", "a"}}});
  same["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:00:10Z";
  auto row = GENERATE_COPY(values<Row>({
      {"heartbeat only", same, false},
      {"label", Node({"node-1", {{"zone", "b"}}}), true},
      {"cordon", Node({"node-1", {{"zone", "a"}}, true}), true},
      {"taint",
       Node({"node-1",
             {{"zone", "a"}},
             false,
             json::array({{{"key", "k"}, {"value", "v"}, {"effect", "NoSchedule"}}})}),
       true},
      {"allocatable", Node({"node-1", {{"zone", "a"}}, false, nullptr, "4"}), true},
  }));
  CAPTURE(row.name);
  CHECK(NodeChangeMatters(base, api::NodeInfo::FromJson(row.node)) == row.matters);
}

TEST_CASE("The node list snapshot is shared until a node changes in a way that matters") {
  FakeClock clock;
  kube::FakeClient client;
  client.Create(kube::kNodes, "", Node({"node-1", {{"zone", "a"}}}));
  client.Create(kube::kNodes, "", Node({"node-2", {{"zone", "b"}}}));
  InformerView view(client, clock);
  CHECK(view.NodeList() == nullptr);  // not synced yet: callers fall back to a LIST
  view.Start();
  REQUIRE(view.WaitForSync(std::chrono::seconds(20)));
  auto first = view.NodeList();
  REQUIRE(first != nullptr);
  CHECK(first->size() == 2);
  CHECK(view.NodeList() == first);  // unchanged: the same list, not a copy

  // A heartbeat changes nothing the snapshot holds: still the same list.
  json heartbeat = client.Get(kube::kNodes, "", "node-1");
  heartbeat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:00:10Z";
  client.Update(kube::kNodes, "", heartbeat);
  client.Create(kube::kNodes, "", Node({"node-3", {{"zone", "c"}}}));  // a marker after it
  REQUIRE(Eventually([&] { return view.sizes().nodes == 3; }));
  auto with_three = view.NodeList();
  CHECK(with_three != first);
  CHECK(with_three->size() == 3);
  CHECK(view.NodeList() == with_three);

  // A label change is seen.
  json relabeled = client.Get(kube::kNodes, "", "node-2");
  relabeled["metadata"]["labels"]["zone"] = "z";
  client.Update(kube::kNodes, "", relabeled);
  REQUIRE(Eventually([&] {
    for (const auto& n : *view.NodeList()) {
      if (n->name == "node-2") return n->labels.Find("zone") && *n->labels.Find("zone") == "z";
    }
    return false;
  }));
  view.Stop();
}

}  // namespace
}  // namespace kmt::controller
