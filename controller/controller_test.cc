// controller/controller_test.cc — the loop's result contract on simulated
// time, over the in-memory API server (ApiView reads it directly).
#include "controller/controller.h"

#include <catch2/catch.hpp>
#include <map>

#include "base/fake_clock.h"
#include "controller/testing/objects.h"
#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::controller {
namespace {

using namespace kmt::controller::testing;  // NOLINT: test fixtures
using kube::kPods;
using kube::kVirtualMachineInstanceMigrations;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kKey = std::string(kNs) + "/" + kVmimName;

// The API view, with the bound-pod cache's readiness of a replica that just took the Lease.
struct View : ApiView {
  using ApiView::ApiView;
  bool bound_pods_ready = true;
  bool BoundPodsReady() override { return bound_pods_ready; }
};

struct World {
  base::FakeClock clock;
  kube::FakeClient client{kube::FakeClient::Options{10000, &clock}};
  std::vector<std::string> lines;
  base::Logger log{clock, base::LogLevel::kDebug, base::LogFormat::kText,
                   [this](const std::string& l) { lines.push_back(l); }};
  base::Registry registry;
  OperatorMetrics metrics{registry, "vmim"};
  KubeEventRecorder events{client, clock, log, "operator-0"};
  View view{client};
  Controller controller{view, client, clock, log, metrics, events, ControllerOptions{2, {}}};
  std::string vmim_uid;

  void SeedVmim(const VmimSpec& spec) {
    json v = Stripped(Vmim(spec));
    json created = client.Create(kVirtualMachineInstanceMigrations, kNs, v);
    vmim_uid = created["metadata"]["uid"];
    created["status"] = v["status"];
    client.Update(kVirtualMachineInstanceMigrations, kNs, created, "status");
  }
  void SeedPod(PodSpec spec) {
    spec.job_uid = vmim_uid;
    json p = Stripped(Pod(spec));
    json created = client.Create(kPods, kNs, p);
    created["status"] = p["status"];
    client.Update(kPods, kNs, created, "status");
  }
  void SeedNodes() {
    for (const auto& n : {NodeSpec{"node-1"}, NodeSpec{"node-3", json::object(), true}}) {
      client.Create(kube::kNodes, "", Node(n));
    }
  }
  // The target pod ungated, with the term ANDed in, and the scheduler's Unschedulable.
  void SeedUnschedulablePod() {
    SeedPod({.gated = false,
             .affinity =
                 json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                 {"nodeSelectorTerms": [{"matchFields": [
                   {"key": "metadata.name", "operator": "In", "values": ["node-3"]}]}]}}})"),
             .scheduled_reason = "Unschedulable",
             .scheduled_message = "0/2 nodes are available."});
  }
  json GetPod() { return client.Get(kPods, kNs, kPodName); }
  std::string OnlyEventMessage() {
    json items = client.List(kube::kEvents, kNs)["items"];
    return items.size() == 1 ? items[0].value("message", "") : "not one Event";
  }
  json Conditions() {
    return client.Get(kVirtualMachineInstanceMigrations, kNs, kVmimName)["status"].value(
        "conditions", json::array());
  }
  bool Metric(const std::string& line) {
    return registry.Render().find(line + "\n") != std::string::npos;
  }
};

bool Gated(const json& pod) { return !pod["spec"].value("schedulingGates", json::array()).empty(); }

TEST_CASE("A target pod event enqueues its VMIM; one pass releases the gate") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  w.controller.OnTargetPod(api::TargetPod::FromJson(w.GetPod()));
  w.controller.OnTargetPod(api::TargetPod::FromJson(w.GetPod()));  // collapses
  REQUIRE(w.controller.queue().Len() == 1);
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK_FALSE(Gated(w.GetPod()));
  CHECK(w.Conditions()[0]["type"] == "addedNodeSelectorTermApplied");
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  CHECK(w.controller.queue().WaitingDelayed() == 0);
  CHECK(w.Metric("controller_runtime_reconcile_total{controller=\"vmim\",result=\"success\"} 1"));
  CHECK(w.Metric("workqueue_adds_total{name=\"vmim\"} 1"));
}

TEST_CASE("While other keys wait, a gate is released at once and its conditions follow") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  w.controller.OnTargetPod(api::TargetPod::FromJson(w.GetPod()));
  const std::string other = std::string(kNs) + "/another-migration";
  w.controller.queue().Add(other);  // waits behind this key (its VMIM does not exist)
  w.client.ClearCalls();
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
  CHECK_FALSE(Gated(w.GetPod()));  // released: the pod's PATCH and no status write
  size_t writes = 0;
  for (const kube::FakeCall& c : w.client.Calls()) {
    if (c.verb != kube::Verb::kGet && c.verb != kube::Verb::kList) ++writes;
  }
  CHECK(writes == 1);
  CHECK(w.Conditions().empty());
  CHECK(w.controller.queue().WaitingDelayed() == 1);
  // The released pod's event (the watch's MODIFIED) is for the conditions and Event alone:
  // it yields to the key that waits.
  w.controller.OnTargetPod(api::TargetPod::FromJson(w.GetPod()));
  CHECK(w.controller.queue().Yielding() == 1);
  CHECK(w.controller.queue().LenAhead() == 1);
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);  // the other key
  // The key comes back for its conditions and Event once the others are served and no key
  // has been added for burst_quiet (more of the burst may be on its way until then).
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  w.clock.Advance(milliseconds(199));
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  w.clock.Advance(milliseconds(1));
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK(w.Conditions()[0]["type"] == "addedNodeSelectorTermApplied");
  CHECK(w.client.Count(kube::kEvents) == 1);
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  // At kStatusDeferral the key comes back at the latest, in case no event came: by now there
  // is nothing left to write.
  w.clock.Advance(milliseconds(4999 - 200));  // 5 s after the release
  CHECK(w.controller.queue().Len() == 0);
  w.clock.Advance(milliseconds(1));
  REQUIRE(w.controller.queue().Len() == 1);
  w.client.ClearCalls();
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  for (const kube::FakeCall& c : w.client.Calls()) {
    CHECK((c.verb == kube::Verb::kGet || c.verb == kube::Verb::kList));
  }
  CHECK(w.client.Count(kube::kEvents) == 1);
  CHECK_FALSE(w.controller.ProcessNext().has_value());

  // Once written, the pod's events go ahead again.
  w.controller.OnTargetPod(api::TargetPod::FromJson(w.GetPod()));
  CHECK(w.controller.queue().Yielding() == 0);
  CHECK(w.controller.queue().LenAhead() == 1);

  // With nothing else waiting, one pass does it all (the first test).
}

TEST_CASE("A burst still arriving puts the conditions off too, though no key waits right now") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  // Another migration's key came and went just before this one's: a burst is on.
  w.controller.queue().Add(std::string(kNs) + "/another-migration");
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  w.clock.Advance(milliseconds(199));
  w.controller.OnTargetPod(api::TargetPod::FromJson(w.GetPod()));
  w.client.ClearCalls();
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
  CHECK_FALSE(Gated(w.GetPod()));
  CHECK(w.Conditions().empty());
  CHECK(w.client.Count(kube::kEvents) == 0);
  // The release's event yields; once nothing has come for burst_quiet, the rest is written.
  w.controller.OnTargetPod(api::TargetPod::FromJson(w.GetPod()));
  CHECK(w.controller.queue().Yielding() == 1);
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  w.clock.Advance(milliseconds(200));
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK(w.Conditions()[0]["type"] == "addedNodeSelectorTermApplied");
  CHECK(w.client.Count(kube::kEvents) == 1);
  // The same Event as a pass that writes everything: this replica released the gate.
  CHECK(w.OnlyEventMessage() ==
        "Released scheduling gate of target pod " + std::string(kNs) + "/" + kPodName +
            " with the added term metadata.name In [node-3] ANDed into its required node "
            "affinity");
}

TEST_CASE("A migration alone is not a burst: its own add does not put its conditions off") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  w.controller.queue().Add(std::string(kNs) + "/another-migration");
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  w.clock.Advance(milliseconds(200));  // the other key came burst_quiet ago
  w.controller.OnTargetPod(api::TargetPod::FromJson(w.GetPod()));
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK_FALSE(Gated(w.GetPod()));
  CHECK(w.Conditions()[0]["type"] == "addedNodeSelectorTermApplied");
  CHECK(w.client.Count(kube::kEvents) == 1);
}

TEST_CASE("Unschedulable: reported, then refreshed every 30 s with the backoff reset") {
  World w;
  w.SeedNodes();
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedUnschedulablePod();
  w.controller.Enqueue(kKey);
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
  json cond = w.Conditions()[1];
  CHECK(cond["type"] == "targetPodUnschedulable");
  CHECK(cond["message"] ==
        "Target pod vms/virt-launcher-vm-1-target is unschedulable: 0/2 nodes are available. Per "
        "node the added term allows: node-3: cordoned");
  CHECK(w.controller.queue().NumRequeues(kKey) == 0);
  w.clock.Advance(seconds(29));
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  w.clock.Advance(seconds(1));
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
  CHECK(w.Metric(
      "controller_runtime_reconcile_total{controller=\"vmim\",result=\"requeue_after\"} 2"));
}

TEST_CASE("A plan that needs the explainer waits for the bound-pod cache; a gate does not") {
  World w;
  w.SeedNodes();
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedUnschedulablePod();
  w.view.bound_pods_ready = false;
  w.controller.Enqueue(kKey);
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
  CHECK(w.Conditions().empty());  // nothing planned from a partial cache
  w.clock.Advance(milliseconds(499));
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  w.clock.Advance(milliseconds(1));
  w.view.bound_pods_ready = true;
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
  REQUIRE(w.Conditions().size() == 2);
  CHECK(w.Conditions()[1]["type"] == "targetPodUnschedulable");

  // A gated pod is released whatever the bound-pod cache: the release needs none of it.
  World g;
  g.SeedVmim({NodeTerm("node-3")});
  g.SeedPod({});
  g.view.bound_pods_ready = false;
  g.controller.Enqueue(kKey);
  REQUIRE(g.controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK_FALSE(Gated(g.GetPod()));
}

TEST_CASE("Unschedulable: a pod affinity namespaceSelector is judged with the namespaces' labels") {
  // The target pod wants a db pod on its node, in a namespace labelled team=x; node-3 (the
  // only node the term allows, cordoned) runs one in namespace "data".
  auto message = [](const json& data_labels) {
    World w;
    w.SeedNodes();
    w.client.Create(kube::kNamespaces, "",
                    {{"metadata", {{"name", "data"}, {"labels", data_labels}}}});
    w.client.Create(
        kPods, "data",
        {{"metadata", {{"name", "db-0"}, {"namespace", "data"}, {"labels", {{"app", "db"}}}}},
         {"spec", {{"nodeName", "node-3"}, {"containers", json::array()}}},
         {"status", {{"phase", "Running"}}}});
    w.SeedVmim({NodeTerm("node-3")});
    w.SeedPod({.gated = false,
               .affinity = json::parse(R"({
                   "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                     {"nodeSelectorTerms": [{"matchFields": [
                       {"key": "metadata.name", "operator": "In", "values": ["node-3"]}]}]}},
                   "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"labelSelector": {"matchLabels": {"app": "db"}},
                      "namespaceSelector": {"matchLabels": {"team": "x"}},
                      "topologyKey": "kubernetes.io/hostname"}]}})"),
               .scheduled_reason = "Unschedulable",
               .scheduled_message = "0/2 nodes are available."});
    w.controller.Enqueue(kKey);
    REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
    return w.Conditions()[1]["message"].get<std::string>();
  };
  const std::string head =
      "Target pod vms/virt-launcher-vm-1-target is unschedulable: 0/2 nodes are available. Per "
      "node the added term allows: node-3: cordoned";
  CHECK(message({{"team", "x"}}) == head);
  CHECK(message({{"team", "y"}}) ==
        head +
            ", VM's own pod affinity (topologyKey kubernetes.io/hostname, selector app=db) has "
            "no matching pod there");
}

TEST_CASE(
    "Unschedulable: the target pod's PersistentVolume is named; pinned elsewhere, permanent") {
  World w;
  w.SeedNodes();  // node-1, node-3 (cordoned)
  const std::string term =
      R"({"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["node-1","node-3"]}]})";
  auto pv_on = [&](const std::string& node) {
    w.client.Create(kube::kPersistentVolumes, "",
                    {{"metadata", {{"name", "pv-1"}}},
                     {"spec",
                      {{"claimRef", {{"namespace", kNs}, {"name", "disk-a"}}},
                       {"nodeAffinity",
                        {{"required",
                          {{"nodeSelectorTerms",
                            {{{"matchExpressions",
                               {{{"key", "kubernetes.io/hostname"},
                                 {"operator", "In"},
                                 {"values", {node}}}}}}}}}}}}}}});
  };
  w.client.Create(
      kube::kPersistentVolumeClaims, kNs,
      {{"metadata",
        {{"name", "disk-a"}, {"annotations", {{"pv.kubernetes.io/bind-completed", "yes"}}}}},
       {"spec", {{"volumeName", "pv-1"}}}});
  w.SeedVmim({term});
  w.SeedPod({.gated = false,
             .affinity = {{"nodeAffinity",
                           {{"requiredDuringSchedulingIgnoredDuringExecution",
                             {{"nodeSelectorTerms", {json::parse(term)}}}}}}},
             .scheduled_reason = "Unschedulable",
             .scheduled_message = "0/2 nodes are available.",
             .claims = {"disk-a"}});
  w.controller.Enqueue(kKey);

  SECTION("the PV keeps it off node-1, a cordon off node-3: reported, not permanent") {
    pv_on("node-3");
    REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
    json cond = w.Conditions()[1];
    CHECK(cond["reason"] == "Unschedulable");
    CHECK(cond["message"] ==
          "Target pod vms/virt-launcher-vm-1-target is unschedulable: 0/2 nodes are available. "
          "Per node the added term allows: node-1: PersistentVolume pv-1 (claim vms/disk-a) "
          "node affinity `kubernetes.io/hostname In [node-3]` excludes it; node-3: cordoned");
  }
  SECTION("the PV is on the node the VM leaves: no node the term allows can ever take it") {
    pv_on("node-src");
    REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
    json cond = w.Conditions()[1];
    CHECK(cond["reason"] == "PermanentlyUnschedulable");
    CHECK(cond["message"].get<std::string>().find(
              "every node the added term allows is out for good: node-1: PersistentVolume pv-1 "
              "(claim vms/disk-a) node affinity `kubernetes.io/hostname In [node-src]` excludes "
              "it; node-3: PersistentVolume pv-1") != std::string::npos);
  }
  SECTION("a PV bound to another namespace's claim is not described to this one") {
    // The tenant wrote volumeName and bind-completed on a claim of its own, naming a PV of
    // another namespace: the VMIM's conditions (which the VM's owner reads) say nothing of
    // that PV, neither its name nor its node affinity.
    pv_on("node-src");
    json pv = w.client.Get(kube::kPersistentVolumes, "", "pv-1");
    pv["spec"]["claimRef"]["namespace"] = "other-tenant";
    w.client.Update(kube::kPersistentVolumes, "", pv);
    REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
    json cond = w.Conditions()[1];
    CHECK(cond["reason"] == "Unschedulable");
    CHECK(cond["message"] ==
          "Target pod vms/virt-launcher-vm-1-target is unschedulable: 0/2 nodes are available. "
          "Per node the added term allows: node-1: fits; node-3: cordoned");
  }
  SECTION("a failed read of the volumes retries the key") {
    pv_on("node-3");
    w.client.FailNext(kube::Verb::kGet, 1, kube::ErrorKind::kUnavailable, "persistentvolumeclaims");
    REQUIRE(w.controller.ProcessNext() == ReconcileResult::kError);
    CHECK(w.Conditions().empty());  // nothing written before the read succeeds
    CHECK(w.controller.queue().NumRequeues(kKey) == 1);
  }
}

TEST_CASE("A conflict re-plans soon; a transient error retries with backoff") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  auto [kind, result, label] = GENERATE(table<kube::ErrorKind, ReconcileResult, std::string>({
      {kube::ErrorKind::kConflict, ReconcileResult::kRequeue, "requeue"},
      {kube::ErrorKind::kUnavailable, ReconcileResult::kError, "error"},
  }));
  CAPTURE(kube::ErrorKindName(kind));
  w.client.FailNext(kube::Verb::kPatch, 2, kind, "pods");
  w.controller.Enqueue(kKey);
  REQUIRE(w.controller.ProcessNext() == result);
  CHECK(Gated(w.GetPod()));
  CHECK(w.controller.queue().NumRequeues(kKey) == 1);
  w.clock.Advance(milliseconds(4));
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  w.clock.Advance(milliseconds(1));  // 5 ms backoff
  REQUIRE(w.controller.ProcessNext() == result);
  w.clock.Advance(milliseconds(10));  // then 10 ms
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK_FALSE(Gated(w.GetPod()));
  CHECK(w.controller.queue().NumRequeues(kKey) == 0);  // forgotten on success
  CHECK(w.Metric("controller_runtime_reconcile_total{controller=\"vmim\",result=\"" + label +
                 "\"} 2"));
  CHECK(w.Metric("workqueue_retries_total{name=\"vmim\"} 2"));
}

kube::KubeError TooManyRequests(std::chrono::seconds retry_after) {
  return kube::ErrorFromResponse(
      429,
      R"({"kind":"Status","code":429,"reason":"TooManyRequests","message":"please try again later"})",
      retry_after, "patch pods vms/virt-launcher-vm-1-target");
}

TEST_CASE("A 429 or 503 with Retry-After is retried no earlier than it asked") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  const int code = GENERATE(429, 503);
  CAPTURE(code);
  w.client.FailNextWith(kube::Verb::kPatch, 1,
                        kube::ErrorFromResponse(code, "", seconds(7), "patch pods"), "pods");
  w.controller.Enqueue(kKey);
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kError);
  CHECK(Gated(w.GetPod()));
  // The key's own backoff would be 5 ms; the server asked for 7 s.
  w.clock.Advance(seconds(7) - milliseconds(1));
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  w.clock.Advance(milliseconds(1));
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK_FALSE(Gated(w.GetPod()));
}

TEST_CASE("A Retry-After is capped at the queue's max backoff; a longer backoff wins") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  RateLimiterOptions limits;
  limits.max_delay = seconds(60);
  Controller controller{
      w.view, w.client, w.clock, w.log, w.metrics, w.events, ControllerOptions{1, limits}};
  w.client.FailNextWith(kube::Verb::kPatch, 1, TooManyRequests(seconds(86400)), "pods");
  controller.Enqueue(kKey);
  REQUIRE(controller.ProcessNext() == ReconcileResult::kError);
  CHECK(w.clock.NextTimerIn() == seconds(60));
  w.clock.Advance(seconds(60));
  // Retry-After shorter than the key's backoff: the backoff (5 ms · 2) wins.
  w.client.FailNext(kube::Verb::kPatch, 1, kube::ErrorKind::kUnavailable, "pods");
  REQUIRE(controller.ProcessNext() == ReconcileResult::kError);
  w.client.FailNextWith(kube::Verb::kPatch, 1, TooManyRequests(seconds(0)), "pods");
  w.clock.Advance(milliseconds(10));
  REQUIRE(controller.ProcessNext() == ReconcileResult::kError);
  CHECK(w.clock.NextTimerIn() == milliseconds(20));
  w.clock.Advance(milliseconds(20));
  REQUIRE(controller.ProcessNext() == ReconcileResult::kSuccess);
}

TEST_CASE("Every line of one reconcile names the key and that reconcile's id") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  // The gate is released, the status write fails: retried.
  w.client.FailNext(kube::Verb::kPatch, 1, kube::ErrorKind::kUnavailable,
                    "virtualmachineinstancemigrations.kubevirt.io");
  w.controller.Enqueue(kKey);
  w.lines.clear();
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kError);
  const std::vector<std::string> first = w.lines;
  REQUIRE(first.size() >= 3);  // released, failed to update conditions, failed to reconcile
  for (const std::string& l : first) {
    CAPTURE(l);
    CHECK(l.ends_with(" vmim=vms/mig-1 reconcile_id=1"));
  }
  CHECK(first[0].find("level=info msg=\"Released gate\"") != std::string::npos);
  CHECK(first[1].find("level=warn msg=\"Failed to update conditions\"") != std::string::npos);
  CHECK(first.back().find("level=error msg=\"Failed to reconcile\"") != std::string::npos);
  w.clock.Advance(seconds(1));
  w.lines.clear();
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  for (const std::string& l : w.lines) {
    // The event recorder's own lines (asynchronous in the operator) name the VMIM only.
    if (l.find("msg=\"Recorded event\"") != std::string::npos) continue;
    CAPTURE(l);
    CHECK(l.ends_with(" vmim=vms/mig-1 reconcile_id=2"));
  }
}

TEST_CASE("A terminal error is counted and not retried") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  w.client.FailNext(kube::Verb::kPatch, 1, kube::ErrorKind::kInvalid, "pods");
  w.controller.Enqueue(kKey);
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kError);
  w.clock.Advance(seconds(3600));
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  CHECK(w.Metric("controller_runtime_terminal_reconcile_errors_total{controller=\"vmim\"} 1"));
  CHECK(w.Metric("controller_runtime_reconcile_errors_total{controller=\"vmim\"} 1"));
}

TEST_CASE("A failed read retries; a deleted VMIM or malformed key ends quietly") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.client.FailNext(kube::Verb::kGet, 1, kube::ErrorKind::kUnavailable);
  w.controller.Enqueue(kKey);
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kError);
  w.clock.Advance(milliseconds(5));
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);

  w.controller.Enqueue("vms/gone");
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  w.controller.Enqueue("no-slash");
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kError);
  w.clock.Advance(seconds(3600));
  CHECK_FALSE(w.controller.ProcessNext().has_value());
}

TEST_CASE("Node changes enqueue only VMIMs whose target pod is unschedulable") {
  World w;
  api::TargetPod unschedulable;
  unschedulable.ns = "a";
  unschedulable.migration_job_name = "m1";
  unschedulable.scheduled = api::ConditionStatus::kFalse;
  unschedulable.scheduled_reason = "Unschedulable";
  api::TargetPod gated = unschedulable;
  gated.migration_job_name = "m2";
  gated.scheduled_reason = "SchedulingGated";
  api::TargetPod bound = unschedulable;
  bound.migration_job_name = "m3";
  bound.node_name = "node-1";
  w.controller.OnNodeChange({std::make_shared<const api::TargetPod>(unschedulable),
                             std::make_shared<const api::TargetPod>(gated),
                             std::make_shared<const api::TargetPod>(bound)});
  REQUIRE(w.controller.ProcessNext().has_value());
  CHECK_FALSE(w.controller.ProcessNext().has_value());
  CHECK(std::ranges::find_if(w.lines, [](const std::string& l) {
          return l.find("a/m2") != std::string::npos;
        }) == w.lines.end());
}

TEST_CASE("maxInboundPerNode: the second waits gated, woken when the first's VMIM is final") {
  World w;
  for (const auto& n : {NodeSpec{"node-1", {{"zone", "a"}}}, NodeSpec{"node-2", {{"zone", "b"}}}}) {
    w.client.Create(kube::kNodes, "", Node(n));
  }
  const std::string term =
      R"({"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]})";
  std::map<std::string, std::string> uids;
  for (const std::string name : {"mig-1", "mig-2"}) {
    json v = Stripped(Vmim({term}));
    v["metadata"]["name"] = name;
    v["metadata"]["annotations"]["migration-target.kubevirt.io/policy"] = "spread";
    v["metadata"]["annotations"]["migration-target.kubevirt.io/max-inbound-per-node"] = "1";
    json created = w.client.Create(kVirtualMachineInstanceMigrations, kNs, v);
    created["status"] = v["status"];
    w.client.Update(kVirtualMachineInstanceMigrations, kNs, created, "status");
    uids[name] = created["metadata"]["uid"];
    json p = Stripped(Pod({.name = "target-" + name, .job_uid = uids[name]}));
    p["metadata"]["annotations"]["kubevirt.io/migrationJobName"] = name;
    json pod = w.client.Create(kPods, kNs, p);
    pod["status"] = p["status"];
    w.client.Update(kPods, kNs, pod, "status");
  }
  auto pod = [&](const std::string& name) { return w.client.Get(kPods, kNs, "target-" + name); };
  auto applied = [&](const std::string& name) {
    for (const json& c : w.client.Get(kVirtualMachineInstanceMigrations, kNs, name)["status"].value(
             "conditions", json::array())) {
      if (c["type"] == "addedNodeSelectorTermApplied")
        return c["status"].get<std::string>() + "/" + c["reason"].get<std::string>();
    }
    return std::string();
  };
  w.controller.Enqueue(std::string(kNs) + "/mig-1");
  w.controller.Enqueue(std::string(kNs) + "/mig-2");
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK_FALSE(Gated(pod("mig-1")));
  // mig-1's pod is released and not bound yet: it may land on node-1, the only node.
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
  CHECK(Gated(pod("mig-2")));
  CHECK(applied("mig-2") == "False/InboundLimitReached");

  // The first binds to node-1: still full; its event wakes the waiter, which waits again.
  json p1 = pod("mig-1");
  p1["spec"]["nodeName"] = "node-1";
  w.client.Update(kPods, kNs, p1);
  w.controller.OnTargetPod(api::TargetPod::FromJson(pod("mig-1")));
  CHECK(w.controller.queue().Len() == 2);  // mig-1 itself and the woken mig-2
  REQUIRE(w.controller.ProcessNext().has_value());
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kRequeueAfter);
  CHECK(Gated(pod("mig-2")));

  // The first migration ends: the waiter is woken at once, not after its 30 s refresh.
  json m1 = w.client.Get(kVirtualMachineInstanceMigrations, kNs, "mig-1");
  m1["status"]["phase"] = "Succeeded";
  w.client.Update(kVirtualMachineInstanceMigrations, kNs, m1, "status");
  w.controller.OnPolicyMigration("spread");
  CHECK(w.controller.queue().Len() == 1);
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK_FALSE(Gated(pod("mig-2")));
  CHECK(applied("mig-2") == "True/TermApplied");
  // Nothing waits any more: another wake enqueues nothing.
  w.controller.OnPolicyMigration("spread");
  CHECK(w.controller.queue().Len() == 0);
}

// Issue 45, finding 2: anyone who may create pods in a namespace can label extra ones with a
// policy migration's kubevirt.io/migrationJobUID. Counted one per migration (KubeVirt's
// recorded target pod), they cannot fill the nodes another evacuation may go to.
TEST_CASE("maxInboundPerNode: extra pods with a migration's uid count once, as its target pod") {
  World w;
  for (const auto& n : {NodeSpec{"node-1", {{"zone", "a"}}}, NodeSpec{"node-2", {{"zone", "a"}}}}) {
    w.client.Create(kube::kNodes, "", Node(n));
  }
  const std::string term =
      R"({"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]})";
  const json zone_a =
      json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}})");
  std::map<std::string, std::string> uids;
  // Created a minute apart: the API server stamps creationTimestamp, the later the newer.
  auto seed_pod = [&](const std::string& name, const std::string& mig, PodSpec spec) {
    spec.name = name;
    spec.job_uid = uids[mig];
    json p = Stripped(Pod(spec));
    p["metadata"]["annotations"]["kubevirt.io/migrationJobName"] = mig;
    json pod = w.client.Create(kPods, kNs, p);
    pod["status"] = p["status"];
    w.client.Update(kPods, kNs, pod, "status");
    w.clock.Advance(seconds(60));
  };
  for (const std::string name : {"mig-1", "mig-2"}) {
    json v = Stripped(Vmim({term}));
    v["metadata"]["name"] = name;
    v["metadata"]["annotations"]["migration-target.kubevirt.io/policy"] = "spread";
    v["metadata"]["annotations"]["migration-target.kubevirt.io/max-inbound-per-node"] = "1";
    if (name == "mig-1") v["status"]["migrationState"]["targetPod"] = "target-mig-1";
    json created = w.client.Create(kVirtualMachineInstanceMigrations, kNs, v);
    created["status"] = v["status"];
    w.client.Update(kVirtualMachineInstanceMigrations, kNs, created, "status");
    uids[name] = created["metadata"]["uid"];
  }
  // mig-1's target pod, released and bound to node-1; three newer pods with its uid, released
  // and unbound, that could each land on node-1 or node-2.
  seed_pod("target-mig-1", "mig-1", {.gated = false, .affinity = zone_a, .node = "node-1"});
  for (const std::string fake : {"fake-1", "fake-2", "fake-3"}) {
    seed_pod(fake, "mig-1", {.gated = false, .affinity = zone_a});
  }
  seed_pod("target-mig-2", "mig-2", {});

  w.controller.Enqueue(std::string(kNs) + "/mig-2");
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  const json p2 = w.client.Get(kPods, kNs, "target-mig-2");
  CHECK_FALSE(Gated(p2));
  // Released to node-2 only: node-1 holds mig-1's one counted pod.
  const std::string affinity = p2["spec"]["affinity"].dump();
  CHECK(affinity.find(R"({"key":"metadata.name","operator":"NotIn","values":["node-1"]})") !=
        std::string::npos);
  CHECK(affinity.find("node-2") == std::string::npos);
}

TEST_CASE("A migration that ended while its pod escaped the gate: reported once, counted once") {
  World w;
  w.SeedNodes();
  // No replica reconciled: the gate was removed and the migration Succeeded on node-1,
  // outside the term; the VMIM has no condition.
  w.SeedVmim({NodeTerm("node-3"), nullptr, "Succeeded"});
  w.SeedPod({.gated = false, .node = "node-1"});
  CHECK(w.Metric("kmt_target_pod_escaped_gate_total 0"));
  w.controller.Enqueue(kKey);
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  const json conds = w.Conditions();
  REQUIRE(conds.size() == 1);
  CHECK(conds[0]["type"] == "addedNodeSelectorTermApplied");
  CHECK(conds[0]["status"] == "False");
  CHECK(conds[0]["reason"] == "TargetPodEscapedGate");
  CHECK(conds[0]["message"].get<std::string>().find(
            "the migration ended on node node-1, which is outside the term (Succeeded)") !=
        std::string::npos);
  CHECK(Gated(w.GetPod()) == false);  // a final migration's pods are never touched
  CHECK(w.Metric("kmt_target_pod_escaped_gate_total 1"));
  w.controller.Enqueue(kKey);
  REQUIRE(w.controller.ProcessNext() == ReconcileResult::kSuccess);
  CHECK(w.Metric("kmt_target_pod_escaped_gate_total 1"));
  CHECK(w.client.Get(kPods, kNs, kPodName)["metadata"]["uid"].is_string());
}

TEST_CASE("Workers on threads finish queued work before Stop returns") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  w.controller.Start();
  w.controller.Enqueue(kKey);
  w.controller.Stop();
  CHECK_FALSE(Gated(w.GetPod()));
}

TEST_CASE("Keys split into namespace and name") {
  std::string ns, name;
  CHECK(SplitKey("vms/mig-1", &ns, &name));
  CHECK(ns == "vms");
  CHECK(name == "mig-1");
  for (const char* bad : {"", "/x", "x/", "a/b/c", "plain"}) {
    CAPTURE(bad);
    CHECK_FALSE(SplitKey(bad, &ns, &name));
  }
  CHECK(KeyOf("vms", "mig-1") == "vms/mig-1");
}

TEST_CASE("SourceNode prefers the VMIM's migrationState, else the VMI's running pod") {
  api::MigrationInfo vmim;
  vmim.uid = "m-uid";
  api::TargetPod target;
  target.labels = api::Labels({{"kubevirt.io/created-by", "vmi-uid"}});
  api::BoundPod other;
  other.node_name = "node-x";
  other.labels = api::Labels({{"kubevirt.io/created-by", "another-vmi"}});
  api::BoundPod own_target;
  own_target.node_name = "node-t";
  own_target.labels = api::Labels(
      {{"kubevirt.io/created-by", "vmi-uid"}, {"kubevirt.io/migrationJobUID", "m-uid"}});
  api::BoundPod source;
  source.node_name = "node-src";
  source.labels =
      api::Labels({{"kubevirt.io/created-by", "vmi-uid"}, {"kubevirt.io/migrationJobUID", "old"}});
  CHECK(SourceNode(vmim, {target}, {other, own_target, source}) == "node-src");
  CHECK(SourceNode(vmim, {target}, {other}) == "");
  vmim.source_node = "node-status";
  CHECK(SourceNode(vmim, {target}, {source}) == "node-status");
}

}  // namespace
}  // namespace kmt::controller
