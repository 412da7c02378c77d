// controller/informer_view_test.cc — the caches feeding the controller, over
// the in-memory API server with real informer threads. Waits are bounded
// polls on state, never fixed sleeps.
#include "controller/informer_view.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <thread>

#include "api/names.h"
#include "base/fake_clock.h"
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
  base::FakeClock clock;
  kube::FakeClient client{kube::FakeClient::Options{10000, &clock}};
  std::vector<std::string> lines;
  base::Logger log{clock, base::LogLevel::kInfo, base::LogFormat::kText, [&](const std::string& l) {
                     static std::mutex mu;
                     std::scoped_lock lock(mu);
                     lines.push_back(l);
                   }};
  base::Registry registry;
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
  // What the waiting gauges read: the gated pod, seen now, and both VMIMs.
  CHECK(view.GatedTargetPodsSeenAt() ==
        std::vector<base::SteadyTime>{*view.TargetPodSeenAt(pod_uid)});
  CHECK(view.MigrationList().size() == 2);
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
  CHECK(view.GatedTargetPodsSeenAt().empty());  // released: nothing waits

  CHECK(view.Migration(kNs, "plain").has_value());
  CHECK_FALSE(view.Migration(kNs, "missing").has_value());
  CHECK(view.TargetPods("other-ns", uid).empty());
  view.Stop();
  controller.Stop();
}

TEST_CASE("PolicyTargetPods: one pod per migration from the caches, extra labelled pods left out") {
  base::FakeClock clock;
  kube::FakeClient client{kube::FakeClient::Options{10000, &clock}};
  // Two migrations under policy "spread" (one with KubeVirt's recorded target pod, one
  // without), a third under another policy; each with pods labelled with its uid.
  std::map<std::string, std::string> uids;
  for (const auto& [name, policy] : std::vector<std::pair<std::string, std::string>>{
           {"mig-1", "spread"}, {"mig-2", "spread"}, {"mig-3", "other"}}) {
    json v = Stripped(Vmim({NodeTerm("node-3")}));
    v["metadata"]["name"] = name;
    v["metadata"]["annotations"]["migration-target.kubevirt.io/policy"] = policy;
    if (name == "mig-1") v["status"]["migrationState"]["targetPod"] = "mig-1-target";
    json created = client.Create(kube::kVirtualMachineInstanceMigrations, kNs, v);
    created["status"] = v["status"];
    client.Update(kube::kVirtualMachineInstanceMigrations, kNs, created, "status");
    uids[name] = created["metadata"]["uid"];
  }
  // Created a minute apart (the API server stamps creationTimestamp): the later, the newer.
  auto pod = [&](const std::string& name, const std::string& mig) {
    client.Create(kube::kPods, kNs, Stripped(Pod({.name = name, .job_uid = uids[mig]})));
    clock.Advance(std::chrono::seconds(60));
  };
  pod("mig-2-old", "mig-2");
  pod("mig-1-target", "mig-1");
  pod("mig-2-new", "mig-2");
  pod("mig-1-extra-a", "mig-1");
  pod("mig-1-extra-b", "mig-1");
  pod("mig-3-target", "mig-3");

  InformerView view(client, clock);
  view.Start();
  REQUIRE(view.WaitForSync(std::chrono::seconds(20)));
  REQUIRE(view.sizes().target_pods == 6);
  auto names = [&](const std::string& except) {
    std::set<std::string> out;
    for (const auto& p : view.PolicyTargetPods("spread", except)) out.insert(p.name);
    return out;
  };
  CHECK(names("") == std::set<std::string>{"mig-1-target", "mig-2-new"});
  CHECK(names(uids["mig-2"]) == std::set<std::string>{"mig-1-target"});
  view.Stop();
}

TEST_CASE("ResolveClaims reads the target pod's volumes from the API, not from a cache") {
  base::FakeClock clock;
  kube::FakeClient client;
  client.Create(
      kube::kPersistentVolumeClaims, kNs,
      {{"metadata",
        {{"name", "disk-a"}, {"annotations", {{"pv.kubernetes.io/bind-completed", "yes"}}}}},
       {"spec", {{"volumeName", "pv-1"}}}});
  client.Create(
      kube::kPersistentVolumes, "",
      {{"metadata", {{"name", "pv-1"}, {"labels", {{"topology.kubernetes.io/zone", "a"}}}}},
       {"spec", {{"claimRef", {{"namespace", kNs}, {"name", "disk-a"}}}}}});
  InformerView view(client, clock);  // not started: nothing cached
  api::TargetPod pod = api::TargetPod::FromJson(Pod({.claims = {"disk-a", "disk-b"}}));
  view.ResolveClaims(pod);
  REQUIRE(pod.claims.size() == 2);
  CHECK(pod.claims[0].resolution.state == api::ClaimState::kBound);
  CHECK(pod.claims[0].resolution.zones ==
        std::vector<api::ZoneLabel>{{"topology.kubernetes.io/zone", {"a"}}});
  CHECK(pod.claims[1].resolution.state == api::ClaimState::kMissing);
}

TEST_CASE("Bound pods keep their labels within the budget a tenant cannot raise") {
  base::FakeClock clock;
  kube::FakeClient client;
  auto bound_pod = [](const std::string& name, const nlohmann::json& labels) {
    return nlohmann::json{
        {"metadata", {{"name", name}, {"labels", labels}}},
        {"spec", {{"nodeName", "node-a"}, {"containers", nlohmann::json::array()}}},
        {"status", {{"phase", "Running"}}}};
  };
  nlohmann::json many = nlohmann::json::object();
  for (int i = 0; i < 5000; ++i) many["tenant.example/k-" + std::to_string(10000 + i)] = "v";
  client.Create(kube::kPods, kNs, bound_pod("heavy", many));
  client.Create(kube::kPods, kNs, bound_pod("plain", {{"app", "db"}, {"tier", "x"}}));
  InformerView view(client, clock);
  view.Start();
  REQUIRE(view.WaitForSync(std::chrono::seconds(20)));
  // A pod created after the initial list comes through the watch, cut the same way.
  client.Create(kube::kPods, kNs, bound_pod("late", many));
  REQUIRE(Eventually([&] { return view.sizes().bound_pods == 3; }));
  std::map<std::string, api::BoundPod> by_name;
  for (api::BoundPod& b : view.BoundPods()) by_name.emplace(b.name, std::move(b));
  // 22-byte keys + 63: 96 labels fit 8 KiB.
  const size_t kept = api::kBoundPodLabelBytes / (22 + 63);
  for (const char* name : {"heavy", "late"}) {
    INFO(name);
    CHECK(by_name.at(name).labels.size() == kept);
    CHECK(by_name.at(name).labels_dropped == 5000 - kept);
  }
  CHECK(by_name.at("plain").labels.size() == 2);
  CHECK(by_name.at("plain").labels_dropped == 0);
  CHECK(view.BoundPodsLabelsCut() == 2);
  view.Stop();
}

TEST_CASE("Bound pods on demand: Start leaves them out until StartBoundPods") {
  base::FakeClock clock;
  kube::FakeClient client;
  client.Create(kube::kNodes, "", Node({"node-a"}));
  client.Create(kube::kPods, kNs,
                {{"metadata", {{"name", "running"}}},
                 {"spec", {{"nodeName", "node-a"}, {"containers", nlohmann::json::array()}}},
                 {"status", {{"phase", "Running"}}}});
  InformerViewOptions options;
  options.bound_pods_on_demand = true;
  InformerView view(client, clock, options);
  view.Start();
  REQUIRE(view.WaitForSync(std::chrono::seconds(20)));
  CHECK(view.HasSynced());  // the standby's caches: ready without bound pods
  CHECK(view.sizes().nodes == 1);
  CHECK(view.sizes().bound_pods == 0);
  CHECK_FALSE(view.BoundPodsReady());
  view.StartBoundPods();
  view.StartBoundPods();  // once
  REQUIRE(Eventually([&] { return view.BoundPodsReady(); }));
  CHECK(view.sizes().bound_pods == 1);
  CHECK(view.BoundPods().at(0).name == "running");
  view.Stop();
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
  base::FakeClock clock;
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

TEST_CASE("A node event costs the target pods that wait unschedulable, not every target pod") {
  base::FakeClock clock;
  kube::FakeClient client;
  base::Logger log{clock, base::LogLevel::kError, base::LogFormat::kText,
                   [](const std::string&) {}};
  base::Registry registry;
  OperatorMetrics metrics{registry, "vmim"};
  KubeEventRecorder events{client, clock, log, "operator-0"};
  constexpr int kNodes = 300;
  constexpr int kPods = 200;
  constexpr int kWaiting = 2;  // ungated, PodScheduled=False/Unschedulable
  for (int i = 0; i < kPods; ++i) {
    const bool waiting = i < kWaiting;
    json pod = Stripped(Pod({.name = "virt-launcher-" + std::to_string(i),
                             .job_uid = "job-" + std::to_string(i),
                             .gated = !waiting,
                             .scheduled_reason = waiting ? "Unschedulable" : "",
                             .scheduled_message = waiting ? "0/300 nodes are available" : ""}));
    pod["metadata"]["annotations"]["kubevirt.io/migrationJobName"] = "mig-" + std::to_string(i);
    json stored = client.Create(kube::kPods, kNs, pod);  // the server drops .status
    if (waiting) {
      stored["status"] = pod["status"];
      client.Update(kube::kPods, kNs, stored, "status");
    }
  }

  InformerView view(client, clock);
  Controller controller(view, client, clock, log, metrics, events);
  view.Connect(controller);
  view.Start();
  REQUIRE(view.WaitForSync(std::chrono::seconds(20)));
  REQUIRE(view.sizes().target_pods == kPods);
  // Every target pod's add has been handled once its key is queued; then empty the queue
  // to see what node events enqueue.
  REQUIRE(Eventually([&] { return controller.queue().Len() == kPods; }));
  while (auto key = controller.queue().TryGet()) controller.queue().Done(*key);

  // 300 nodes arrive (as with a node list): each hands over the two waiting pods, where a
  // copy of the target-pod list per node was 300 x 200.
  for (int i = 0; i < kNodes; ++i) {
    client.Create(kube::kNodes, "", Node({"node-" + std::to_string(i), {{"zone", "a"}}}));
  }
  CHECK(Eventually([&] { return view.node_rechecks() == uint64_t{kNodes} * kWaiting; }));

  // Ten node changes that matter: each hands over exactly the two waiting pods.
  const uint64_t before = view.node_rechecks();
  for (int i = 0; i < 10; ++i) {
    json n = client.Get(kube::kNodes, "", "node-" + std::to_string(i));
    n["metadata"]["labels"]["zone"] = "b";
    client.Update(kube::kNodes, "", n);
  }
  CHECK(Eventually([&] { return view.node_rechecks() == before + 10 * kWaiting; }));
  // ... whose VMIMs are queued, and only those.
  std::set<std::string> queued;
  while (auto key = controller.queue().TryGet()) {
    queued.insert(*key);
    controller.queue().Done(*key);
  }
  CHECK(queued == std::set<std::string>{std::string(kNs) + "/mig-0", std::string(kNs) + "/mig-1"});

  // A waiting pod that got scheduled leaves the index; a deleted one too. Their handlers
  // have run once each queued its VMIM (the index is kept before the controller is told).
  json bound = client.Get(kube::kPods, kNs, "virt-launcher-0");
  bound["spec"]["nodeName"] = "node-1";
  bound["status"]["conditions"] = json::array({{{"type", "PodScheduled"}, {"status", "True"}}});
  client.Update(kube::kPods, kNs, bound);
  client.Delete(kube::kPods, kNs, "virt-launcher-1");
  REQUIRE(Eventually([&] { return controller.queue().Len() == 2; }));
  const uint64_t settled = view.node_rechecks();
  json n = client.Get(kube::kNodes, "", "node-20");
  n["spec"]["unschedulable"] = true;
  client.Update(kube::kNodes, "", n);
  client.Create(kube::kNodes, "", Node({"node-marker"}));
  REQUIRE(Eventually([&] { return view.sizes().nodes == kNodes + 1; }));
  CHECK(view.node_rechecks() == settled);  // nobody waits: no work
  CHECK(controller.queue().Len() == 2);    // and nothing queued
  view.Stop();
  controller.Stop();
}

TEST_CASE("The initial lists hand each VMIM's key to the controller once, not once per event") {
  base::FakeClock clock;
  kube::FakeClient client;
  base::Logger log{clock, base::LogLevel::kError, base::LogFormat::kText,
                   [](const std::string&) {}};
  base::Registry registry;
  OperatorMetrics metrics{registry, "vmim"};
  KubeEventRecorder events{client, clock, log, "operator-0"};
  // Three placed migrations, each with a gated target pod and one that waits unschedulable;
  // a plain migration (nothing to place) with one target pod; 50 nodes. Before: 3 VMIM adds,
  // 7 pod adds and, for each node listed after the pods, the 3 waiting pods again.
  constexpr int kPlaced = 3;
  constexpr int kNodes = 50;
  std::set<std::string> keys;
  for (int i = 0; i <= kPlaced; ++i) {
    const bool placed = i < kPlaced;
    json v = Stripped(Vmim(placed ? VmimSpec{{NodeTerm("node-3")}} : VmimSpec{}));
    v["metadata"]["name"] = "mig-" + std::to_string(i);
    const std::string uid =
        client.Create(kube::kVirtualMachineInstanceMigrations, kNs, v)["metadata"]["uid"];
    keys.insert(std::string(kNs) + "/mig-" + std::to_string(i));
    for (int k = 0; k < (placed ? 2 : 1); ++k) {
      const bool waiting = k == 1;
      json pod =
          Stripped(Pod({.name = "virt-launcher-" + std::to_string(i) + "-" + std::to_string(k),
                        .job_uid = uid,
                        .gated = !waiting,
                        .scheduled_reason = waiting ? "Unschedulable" : "",
                        .scheduled_message = waiting ? "0/50 nodes are available" : ""}));
      pod["metadata"]["annotations"]["kubevirt.io/migrationJobName"] = "mig-" + std::to_string(i);
      json stored = client.Create(kube::kPods, kNs, pod);
      if (waiting) {
        stored["status"] = pod["status"];
        client.Update(kube::kPods, kNs, stored, "status");
      }
    }
  }
  for (int i = 0; i < kNodes; ++i) {
    client.Create(kube::kNodes, "", Node({"node-" + std::to_string(i), {{"zone", "a"}}}));
  }

  InformerView view(client, clock);
  Controller controller(view, client, clock, log, metrics, events);
  view.Connect(controller);
  view.Start();
  REQUIRE(view.WaitForSync(std::chrono::seconds(20)));
  REQUIRE(Eventually([&] { return controller.queue().Len() == keys.size(); }));
  CHECK(view.keys_handed_over() == keys.size());
  CHECK(view.node_rechecks() == 0);  // listed nodes are no change to re-explain
  std::set<std::string> queued;
  while (auto key = controller.queue().TryGet()) {
    queued.insert(*key);
    controller.queue().Done(*key);
  }
  CHECK(queued == keys);

  // After the initial lists, events hand over as before: a node change that matters, the
  // three waiting pods; a pod's update, its VMIM.
  json n = client.Get(kube::kNodes, "", "node-7");
  n["metadata"]["labels"]["zone"] = "b";
  client.Update(kube::kNodes, "", n);
  CHECK(Eventually([&] { return view.node_rechecks() == uint64_t{kPlaced}; }));
  json p = client.Get(kube::kPods, kNs, "virt-launcher-0-0");
  p["metadata"]["labels"]["extra"] = "x";
  client.Update(kube::kPods, kNs, p);
  CHECK(Eventually([&] { return view.keys_handed_over() == keys.size() + kPlaced + 1; }));
  view.Stop();
  controller.Stop();
}

TEST_CASE("The target-pod index reads any JSON without undefined behaviour or exceptions") {
  struct Row {
    const char* json;
    std::vector<std::string> values;
  };
  const Row row = GENERATE(values<Row>({
      {R"({"metadata": {"labels": {"kubevirt.io/migrationJobUID": "u-1"}}})", {"u-1"}},
      {R"({})", {}},
      {R"(null)", {}},
      {R"([])", {}},
      {R"([{"metadata": {}}])", {}},
      {R"("pod")", {}},
      {R"(7)", {}},
      {R"({"metadata": null})", {}},
      {R"({"metadata": 5})", {}},
      {R"({"metadata": ["labels"]})", {}},
      {R"({"metadata": {}})", {}},
      {R"({"metadata": {"labels": null}})", {}},
      {R"({"metadata": {"labels": "kubevirt.io/migrationJobUID=u-1"}})", {}},
      {R"({"metadata": {"labels": ["kubevirt.io/migrationJobUID"]}})", {}},
      {R"({"metadata": {"labels": {"kubevirt.io/migrationJobUID": 5}}})", {}},
      {R"({"metadata": {"labels": {"kubevirt.io/migrationJobUID": null}}})", {}},
      {R"({"metadata": {"labels": {"kubevirt.io/migrationJobUID": {"a": "b"}}}})", {}},
  }));
  CAPTURE(row.json);
  const json pod = json::parse(row.json);  // const: as the informer hands it over
  std::vector<std::string> got;
  CHECK_NOTHROW(got = MigrationJobIndexValues(pod));
  CHECK(got == row.values);
}

}  // namespace
}  // namespace kmt::controller
