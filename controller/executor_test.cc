// controller/executor_test.cc — plans applied to the in-memory API server;
// assertions on the resulting objects, not on the calls made.
#include "controller/executor.h"

#include <catch2/catch.hpp>

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

const char* kGate = "migration-target.kubevirt.io/added-node-selector-term";

struct World {
  base::FakeClock clock;
  kube::FakeClient client{kube::FakeClient::Options{10000, &clock}};
  std::vector<std::string> lines;
  base::Logger log{clock, base::LogLevel::kDebug, base::LogFormat::kText,
                   [this](const std::string& l) { lines.push_back(l); }};
  KubeEventRecorder events{client, clock, log, "operator-0"};
  Executor executor{client, events, log};
  std::string vmim_uid;
  std::vector<api::NodeInfo> nodes;

  // Stores the VMIM (with status, descheduler annotation and evacuation node,
  // which the executor must never touch) and returns its uid.
  void SeedVmim(const VmimSpec& spec) {
    json v = Stripped(Vmim(spec));
    v["metadata"]["annotations"]["descheduler.alpha.kubernetes.io/request-evict-only"] = "";
    json created = client.Create(kVirtualMachineInstanceMigrations, kNs, v);
    vmim_uid = created["metadata"]["uid"];
    created["status"] = v["status"];
    created["status"]["evacuationNodeName"] = "node-src";
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
    for (const auto& n : {NodeSpec{"node-1"}, NodeSpec{"node-3"}}) {
      json created = client.Create(kube::kNodes, "", Node(n));
      nodes.push_back(api::NodeInfo::FromJson(created));
    }
  }

  json GetVmim() { return client.Get(kVirtualMachineInstanceMigrations, kNs, kVmimName); }
  json GetPod() { return client.Get(kPods, kNs, kPodName); }

  Observed Observe() {
    Observed o;
    o.vmim = api::MigrationInfo::FromJson(GetVmim());
    json pods = client.List(kPods, kNs);
    for (const auto& p : pods["items"]) o.target_pods.push_back(api::TargetPod::FromJson(p));
    o.nodes = nodes;
    o.source_node = kSourceNode;
    return o;
  }

  ExecResult ReconcileOnce() {
    Observed o = Observe();
    return executor.Apply(o.vmim, Reconcile(o, clock.WallNow()));
  }

  json Events() { return client.List(kube::kEvents, kNs)["items"]; }
};

// What the executor must never change on the VMIM.
void CheckVmimUntouchedOutsideConditions(const json& before, const json& after) {
  json a = before, b = after;
  for (json* j : {&a, &b}) {
    (*j)["metadata"].erase("resourceVersion");
    (*j)["metadata"].erase("managedFields");
    (*j)["status"].erase("conditions");
  }
  CHECK(a == b);
}

TEST_CASE("Executor releases the gate, writes the condition, records the Event") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  w.SeedNodes();
  const json vmim_before = w.GetVmim();
  w.clock.Advance(std::chrono::seconds(3));

  ExecResult r = w.ReconcileOnce();
  REQUIRE(r.outcome == ExecOutcome::kDone);
  REQUIRE(r.released_pods.size() == 1);

  json pod = w.GetPod();
  // The real API server omits the emptied list (omitempty); the fake keeps [].
  CHECK(pod["spec"].value("schedulingGates", json::array()) == json::array());
  CHECK(pod["spec"]["affinity"] ==
        json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-3"]}]}]}}})"));
  CHECK(r.released_pods[0] == pod["metadata"]["uid"].get<std::string>());

  json vmim = w.GetVmim();
  CHECK(vmim["status"]["conditions"] ==
        json::parse(R"([{"type": "addedNodeSelectorTermApplied", "status": "True",
          "reason": "TermApplied",
          "message": "Target pod vms/virt-launcher-vm-1-target requires the added term metadata.name In [node-3]",
          "lastProbeTime": "2026-01-01T00:00:03Z", "lastTransitionTime": "2026-01-01T00:00:03Z"}])"));
  CheckVmimUntouchedOutsideConditions(vmim_before, vmim);

  json events = w.Events();
  REQUIRE(events.size() == 1);
  const json& e = events[0];
  CHECK(e["type"] == "Normal");
  CHECK(e["reason"] == "TermApplied");
  CHECK(e["message"] ==
        "Released scheduling gate of target pod vms/virt-launcher-vm-1-target with the added term "
        "metadata.name In [node-3] ANDed into its required node affinity");
  CHECK(e["involvedObject"] ==
        json{{"apiVersion", "kubevirt.io/v1"},
             {"kind", "VirtualMachineInstanceMigration"},
             {"namespace", kNs},
             {"name", kVmimName},
             {"uid", w.vmim_uid},
             {"resourceVersion", vmim_before["metadata"]["resourceVersion"]}});
  CHECK(e["source"] == json{{"component", "migration-target-operator"}, {"host", "operator-0"}});
  CHECK(e["count"] == 1);
  CHECK(e["firstTimestamp"] == "2026-01-01T00:00:03Z");
  CHECK(e["lastTimestamp"] == "2026-01-01T00:00:03Z");
  CHECK(std::ranges::find(w.lines,
                          "ts=2026-01-01T00:00:03.000000Z level=info msg=\"Released gate\" "
                          "pod=vms/virt-launcher-vm-1-target vmim=vms/mig-1") != w.lines.end());

  // Level-based: a second pass changes nothing and records nothing.
  const int64_t rv = w.client.ResourceVersion();
  REQUIRE(w.ReconcileOnce().outcome == ExecOutcome::kDone);
  CHECK(w.client.ResourceVersion() == rv);
  CHECK(w.Events().size() == 1);
}

TEST_CASE("A pod that changed after planning is not patched: re-plan") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  Observed o = w.Observe();
  Plan plan = Reconcile(o, w.clock.WallNow());
  // Meanwhile someone adds another gate.
  json pod = w.GetPod();
  pod["spec"]["schedulingGates"].push_back({{"name", "other.example.com/gate"}});
  w.client.Update(kPods, kNs, pod);
  const json vmim_before = w.GetVmim();

  ExecResult r = w.executor.Apply(o.vmim, plan);
  CHECK(r.outcome == ExecOutcome::kReplan);
  CHECK(r.released_pods.empty());
  json after = w.GetPod();
  CHECK(after["spec"]["schedulingGates"] ==
        json::array({{{"name", kGate}}, {{"name", "other.example.com/gate"}}}));
  CHECK_FALSE(after["spec"].contains("affinity"));
  CHECK(w.GetVmim() == vmim_before);  // no status written
  CHECK(w.Events().empty());

  // Re-planning from the fresh state succeeds and keeps the other gate.
  REQUIRE(w.ReconcileOnce().outcome == ExecOutcome::kDone);
  CHECK(w.GetPod()["spec"]["schedulingGates"] ==
        json::array({{{"name", "other.example.com/gate"}}}));
}

TEST_CASE("KubeVirt's own status writes meanwhile do not conflict with ours") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  Observed o = w.Observe();
  Plan plan = Reconcile(o, w.clock.WallNow());
  // KubeVirt moves the phase on meanwhile.
  json vmim = w.GetVmim();
  vmim["status"]["phase"] = "PreparingTarget";
  w.client.Update(kVirtualMachineInstanceMigrations, kNs, vmim, "status");

  REQUIRE(w.executor.Apply(o.vmim, plan).outcome == ExecOutcome::kDone);
  json after = w.GetVmim();
  CHECK(after["status"]["phase"] == "PreparingTarget");
  CHECK(after["status"]["conditions"][0]["status"] == "True");
  REQUIRE(w.Events().size() == 1);
  CHECK(w.Events()[0]["reason"] == "TermApplied");
}

TEST_CASE("Conditions someone else changed after planning are not overwritten: re-plan") {
  World w;
  w.SeedVmim({NodeTerm("node-3"), nullptr, "Scheduling",
              json::array({{{"type", "kubevirtOwn"},
                            {"status", "False"},
                            {"lastProbeTime", nullptr},
                            {"lastTransitionTime", nullptr}}})});
  w.SeedPod({});
  Observed o = w.Observe();
  Plan plan = Reconcile(o, w.clock.WallNow());
  json vmim = w.GetVmim();
  vmim["status"]["conditions"][0]["status"] = "True";
  w.client.Update(kVirtualMachineInstanceMigrations, kNs, vmim, "status");

  ExecResult r = w.executor.Apply(o.vmim, plan);
  CHECK(r.outcome == ExecOutcome::kReplan);
  CHECK(r.released_pods.size() == 1);  // the pod patch went through before
  json after = w.GetVmim();
  CHECK(after["status"]["conditions"] == vmim["status"]["conditions"]);
  CHECK(w.Events().empty());

  REQUIRE(w.ReconcileOnce().outcome == ExecOutcome::kDone);
  after = w.GetVmim();
  REQUIRE(after["status"]["conditions"].size() == 2);
  CHECK(after["status"]["conditions"][0] == vmim["status"]["conditions"][0]);
  CHECK(after["status"]["conditions"][1]["type"] == "addedNodeSelectorTermApplied");
  REQUIRE(w.Events().size() == 1);
  CHECK(
      w.Events()[0]["message"] ==
      "Target pod vms/virt-launcher-vm-1-target carries the added term metadata.name In [node-3]");
}

TEST_CASE("A phase write racing between the read and the patch is retried at once") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({.gated = false});  // escaped: deleted, and KubeVirt fails the VMIM at once
  Observed o = w.Observe();
  Plan plan = Reconcile(o, w.clock.WallNow());
  int raced = 0;
  w.client.SetCallHook([&](const kube::FakeCall& c) {
    if (raced >= 2 || c.verb != kube::Verb::kPatch || c.subresource != "status") return;
    ++raced;
    json v = w.GetVmim();
    v["status"]["phase"] = raced == 1 ? "Scheduling" : "Failed";
    v["status"]["migrationState"]["failed"] = raced == 2;
    w.client.Update(kVirtualMachineInstanceMigrations, kNs, v, "status");
  });
  REQUIRE(w.executor.Apply(o.vmim, plan).outcome == ExecOutcome::kDone);
  CHECK(raced == 2);
  json after = w.GetVmim();
  CHECK(after["status"]["phase"] == "Failed");
  CHECK(after["status"]["conditions"][0]["reason"] == "TargetPodEscapedGate");
  REQUIRE(w.Events().size() == 1);
  CHECK(w.Events()[0]["reason"] == "TargetPodEscapedGate");
}

TEST_CASE("A conditions write racing between the read and the patch fails its test op") {
  World w;
  w.SeedVmim({NodeTerm("node-3"), nullptr, "Scheduling",
              json::array({{{"type", "kubevirtOwn"},
                            {"status", "False"},
                            {"lastProbeTime", nullptr},
                            {"lastTransitionTime", nullptr}}})});
  w.SeedPod({});
  Observed o = w.Observe();
  Plan plan = Reconcile(o, w.clock.WallNow());
  // Stage the race: right before our status PATCH, someone rewrites the list.
  bool raced = false;
  w.client.SetCallHook([&](const kube::FakeCall& c) {
    if (raced || c.verb != kube::Verb::kPatch || c.subresource != "status") return;
    raced = true;
    json v = w.GetVmim();
    v["status"]["conditions"][0]["status"] = "True";
    w.client.Update(kVirtualMachineInstanceMigrations, kNs, v, "status");
  });
  ExecResult r = w.executor.Apply(o.vmim, plan);
  CHECK(raced);
  CHECK(r.outcome == ExecOutcome::kReplan);
  json after = w.GetVmim();
  REQUIRE(after["status"]["conditions"].size() == 1);
  CHECK(after["status"]["conditions"][0]["status"] == "True");
}

TEST_CASE("A conditions write that took effect though its answer was lost keeps its Event") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  Observed o = w.Observe();
  Plan plan = Reconcile(o, w.clock.WallNow());
  REQUIRE(plan.events.size() == 1);
  // The status PATCH reaches the server, but the connection breaks before its answer.
  SECTION("the transport sent it again: the second one fails its test op") {}
  bool read_back_breaks = false;
  SECTION("the call fails with the broken connection") {
    w.client.FailNext(kube::Verb::kPatch, 1, kube::ErrorKind::kTransport,
                      "virtualmachineinstancemigrations.kubevirt.io");
  }
  SECTION("the call fails, and so does the first read back") {
    w.client.FailNext(kube::Verb::kPatch, 1, kube::ErrorKind::kTransport,
                      "virtualmachineinstancemigrations.kubevirt.io");
    read_back_breaks = true;
  }
  bool lost = false;
  w.client.SetCallHook([&](const kube::FakeCall& c) {
    if (lost || c.verb != kube::Verb::kPatch || c.subresource != "status") return;
    lost = true;
    w.client.Patch(kVirtualMachineInstanceMigrations, kNs, kVmimName, kube::PatchType::kJsonPatch,
                   c.body, "status");
    if (read_back_breaks) {
      w.client.FailNext(kube::Verb::kGet, 1, kube::ErrorKind::kTransport,
                        "virtualmachineinstancemigrations.kubevirt.io");
    }
  });
  ExecResult r = w.executor.Apply(o.vmim, plan);
  CHECK(lost);
  CHECK(r.outcome == ExecOutcome::kDone);
  json after = w.GetVmim();
  REQUIRE(after["status"]["conditions"].size() == 1);
  CHECK(after["status"]["conditions"][0]["reason"] == "TermApplied");
  // The next plan (from the conditions now stored) has nothing to say: this was the
  // one chance to record the Event.
  CHECK(Reconcile(w.Observe(), w.clock.WallNow()).events.empty());
  REQUIRE(w.Events().size() == 1);
  CHECK(w.Events()[0]["reason"] == "TermApplied");
}

TEST_CASE("An escaped pod is deleted by uid; a replacement of the same name is not") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({.gated = false});
  Observed o = w.Observe();
  Plan plan = Reconcile(o, w.clock.WallNow());
  REQUIRE(plan.pod_deletions.size() == 1);

  SECTION("deleted, reported, Warning Event") {
    REQUIRE(w.executor.Apply(o.vmim, plan).outcome == ExecOutcome::kDone);
    CHECK_THROWS_AS(w.GetPod(), kube::KubeError);
    json cond = w.GetVmim()["status"]["conditions"][0];
    CHECK(cond["reason"] == "TargetPodEscapedGate");
    CHECK(cond["status"] == "False");
    REQUIRE(w.Events().size() == 1);
    CHECK(w.Events()[0]["type"] == "Warning");
    // Deleting again (the pod still in a stale cache) is harmless.
    REQUIRE(w.executor
                .Apply(api::MigrationInfo::FromJson(w.GetVmim()),
                       Plan{plan.pod_patches, plan.pod_deletions})
                .outcome == ExecOutcome::kDone);
  }
  SECTION("replaced meanwhile: kept, re-plan") {
    w.client.Delete(kPods, kNs, kPodName);
    w.SeedPod({});  // a new, gated pod of the same name
    const std::string new_uid = w.GetPod()["metadata"]["uid"];
    ExecResult r = w.executor.Apply(o.vmim, plan);
    CHECK(r.outcome == ExecOutcome::kReplan);
    CHECK(w.GetPod()["metadata"]["uid"] == new_uid);
    CHECK(w.Events().empty());
  }
}

TEST_CASE("A deletion planned from a stale VMIM is not made: re-plan, then delete and report") {
  // The informer has not yet shown the operator's own last status write (the gate's
  // release): deleting on that basis would leave the report unwritable, since KubeVirt fails
  // the VMIM as soon as the pod is gone.
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({.gated = false});
  Observed stale = w.Observe();
  Plan plan = Reconcile(stale, w.clock.WallNow());
  REQUIRE(plan.pod_deletions.size() == 1);
  json vmim = w.GetVmim();
  vmim["status"]["conditions"] = json::array({{{"type", "addedNodeSelectorTermApplied"},
                                               {"status", "True"},
                                               {"reason", "TermApplied"},
                                               {"message", "written before"},
                                               {"lastProbeTime", nullptr},
                                               {"lastTransitionTime", nullptr}}});
  w.client.Update(kVirtualMachineInstanceMigrations, kNs, vmim, "status");

  ExecResult r = w.executor.Apply(stale.vmim, plan);
  CHECK(r.outcome == ExecOutcome::kReplan);
  CHECK_NOTHROW(w.GetPod());  // not deleted
  CHECK(w.Events().empty());

  REQUIRE(w.ReconcileOnce().outcome == ExecOutcome::kDone);
  CHECK_THROWS_AS(w.GetPod(), kube::KubeError);
  json cond = w.GetVmim()["status"]["conditions"][0];
  CHECK(cond["reason"] == "TargetPodEscapedGate");
  REQUIRE(w.Events().size() == 1);
  CHECK(w.Events()[0]["type"] == "Warning");
}

TEST_CASE("API failures map to retry, re-plan or terminal, as kube::DispositionOf says") {
  auto [kind, outcome] = GENERATE(table<kube::ErrorKind, ExecOutcome>({
      {kube::ErrorKind::kUnavailable, ExecOutcome::kRetry},
      {kube::ErrorKind::kTimeout, ExecOutcome::kRetry},
      {kube::ErrorKind::kTransport, ExecOutcome::kRetry},
      {kube::ErrorKind::kInternal, ExecOutcome::kRetry},
      {kube::ErrorKind::kConflict, ExecOutcome::kReplan},
      {kube::ErrorKind::kNotFound, ExecOutcome::kReplan},
      {kube::ErrorKind::kGone, ExecOutcome::kReplan},
      {kube::ErrorKind::kInvalid, ExecOutcome::kTerminal},
      {kube::ErrorKind::kForbidden, ExecOutcome::kTerminal},
      {kube::ErrorKind::kUnauthorized, ExecOutcome::kTerminal},
      {kube::ErrorKind::kConfig, ExecOutcome::kTerminal},
      {kube::ErrorKind::kTooLarge, ExecOutcome::kTerminal},
  }));
  CAPTURE(kube::ErrorKindName(kind));
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  w.client.FailNext(kube::Verb::kPatch, 1, kind, "pods");
  ExecResult r = w.ReconcileOnce();
  CHECK(r.outcome == outcome);
  CHECK_FALSE(r.error.empty());
  CHECK(w.GetPod()["spec"].contains("schedulingGates"));
  CHECK_FALSE(w.GetVmim()["status"].contains("conditions"));
}

TEST_CASE("A 429's Retry-After is handed to the caller with the retry") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  w.client.FailNextWith(
      kube::Verb::kPatch, 1,
      kube::ErrorFromResponse(429, R"({"kind":"Status","code":429,"reason":"TooManyRequests",
          "message":"too many requests, please try again later"})",
                              std::chrono::seconds(7), "patch pods"),
      "pods");
  ExecResult r = w.ReconcileOnce();
  CHECK(r.outcome == ExecOutcome::kRetry);
  CHECK(r.retry_after == std::chrono::seconds(7));
  CHECK(w.GetPod()["spec"].contains("schedulingGates"));
}

TEST_CASE("Status is written only when the conditions changed") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  REQUIRE(w.ReconcileOnce().outcome == ExecOutcome::kDone);
  w.client.ClearCalls();
  REQUIRE(w.ReconcileOnce().outcome == ExecOutcome::kDone);
  for (const auto& c : w.client.Calls()) {
    CAPTURE(kube::VerbName(c.verb), c.resource);
    CHECK(c.verb != kube::Verb::kPatch);
    CHECK(c.verb != kube::Verb::kUpdate);
    CHECK(c.verb != kube::Verb::kCreate);
  }
}

TEST_CASE("A failed Event is logged and does not fail the reconcile") {
  World w;
  w.SeedVmim({NodeTerm("node-3")});
  w.SeedPod({});
  w.client.FailNext(kube::Verb::kCreate, 1, kube::ErrorKind::kForbidden, "events");
  REQUIRE(w.ReconcileOnce().outcome == ExecOutcome::kDone);
  CHECK(w.Events().empty());
  CHECK(w.GetVmim()["status"]["conditions"][0]["status"] == "True");
  bool logged = false;
  for (const auto& l : w.lines)
    logged = logged || l.find("msg=\"Failed to record event\"") != std::string::npos;
  CHECK(logged);
}

TEST_CASE("The status patch tests what it replaces") {
  Plan plan;
  plan.conditions = {{"a", "True", "R", "m", "", ""}};
  const json written = json::parse(R"([{"type": "a", "status": "True", "reason": "R",
      "message": "m", "lastProbeTime": null, "lastTransitionTime": null}])");
  json with_list = {{"metadata", {{"resourceVersion", "42"}}},
                    {"status",
                     {{"phase", "Scheduling"},
                      {"conditions", json::array({{{"type", "x"}, {"status", "True"}}})}}}};
  CHECK(Executor::StatusPatch(with_list, plan) ==
        json::array({{{"op", "test"},
                      {"path", "/status/conditions"},
                      {"value", with_list["status"]["conditions"]}},
                     {{"op", "add"}, {"path", "/status/conditions"}, {"value", written}}}));
  json without_list = {{"metadata", {{"resourceVersion", "42"}}},
                       {"status", {{"phase", "Scheduling"}}}};
  CHECK(Executor::StatusPatch(without_list, plan) ==
        json::array({{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", "42"}},
                     {{"op", "add"}, {"path", "/status/conditions"}, {"value", written}}}));
  json without_status = {{"metadata", {{"resourceVersion", "42"}}}};
  CHECK(Executor::StatusPatch(without_status, plan)[1] ==
        json{{"op", "add"}, {"path", "/status"}, {"value", {{"conditions", written}}}});
}

TEST_CASE("The status patch of an odd VMIM answer is a patch, never a throw or a crash") {
  Plan plan;
  plan.conditions = {{"a", "True", "R", "m", "", ""}};
  struct Row {
    const char* current;
    std::string tested_rv;     // the guard when there is no conditions list
    const char* replace_path;  // where the conditions are written
  };
  const Row row = GENERATE(values<Row>({
      {R"({})", "", "/status"},
      {R"({"metadata": null})", "", "/status"},
      {R"({"metadata": []})", "", "/status"},
      {R"({"metadata": "m"})", "", "/status"},
      {R"({"metadata": {"resourceVersion": 42}})", "", "/status"},
      {R"({"metadata": {"resourceVersion": null}, "status": {}})", "", "/status/conditions"},
      {R"({"metadata": {"resourceVersion": "7"}, "status": {"conditions": "x"}})", "7",
       "/status/conditions"},
      {R"({"metadata": {"resourceVersion": "7"}, "status": "Running"})", "7", "/status"},
      {R"({"metadata": {"resourceVersion": "7"}, "status": null})", "7", "/status"},
      {R"([])", "", "/status"},
      {R"([{"metadata": {"resourceVersion": "7"}}])", "", "/status"},
      {R"("vmim")", "", "/status"},
      {R"(null)", "", "/status"},
  }));
  CAPTURE(row.current);
  const json current = json::parse(row.current);
  json ops;
  REQUIRE_NOTHROW(ops = Executor::StatusPatch(current, plan));
  REQUIRE(ops.size() == 2);
  CHECK(ops[0] ==
        json{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", row.tested_rv}});
  CHECK(ops[1]["op"] == "add");
  CHECK(ops[1]["path"] == row.replace_path);
}

}  // namespace
}  // namespace kmt::controller
