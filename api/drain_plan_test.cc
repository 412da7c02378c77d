#include "api/drain_plan.h"

#include <catch2/catch.hpp>

namespace kmt::api {
namespace {

using json = nlohmann::json;

// A Ready node with `cpu` cores and 64Gi; `patch` merged over it (RFC 7386).
NodeInfo Node(const std::string& name, const std::string& cpu, const std::string& rack,
              const json& patch = json::object()) {
  json n = {{"metadata",
             {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}, {"rack", rack}}}}},
            {"spec", json::object()},
            {"status",
             {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
              {"allocatable", {{"cpu", cpu}, {"memory", "64Gi"}, {"pods", "110"}}}}}};
  n.merge_patch(patch);
  return NodeInfo::FromJson(n);
}

json LauncherPod(const std::string& vm, const std::string& cpu, const std::string& node = "a") {
  return {
      {"metadata",
       {{"name", "virt-launcher-" + vm},
        {"namespace", "vms"},
        {"labels", {{"kubevirt.io", "virt-launcher"}, {"kubevirt.io/created-by", vm + "-uid"}}}}},
      {"spec",
       {{"nodeName", node},
        {"containers",
         {{{"name", "compute"},
           {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}}}}},
      {"status", {{"phase", "Running"}}}};
}

// A live-migratable VM with strategy LiveMigrate on node "a", requesting `cpu`.
DrainVm Vm(const std::string& name, const std::string& cpu = "2",
           const MigrationTargetPolicy* policy = nullptr) {
  DrainVm v;
  v.ns = "vms";
  v.name = name;
  v.strategy = EvictionStrategy::kLiveMigrate;
  v.migratability.migratable = true;
  v.pod = TargetPod::FromJson(LauncherPod(name, cpu));
  v.policy = policy;
  return v;
}

BoundPod Bound(const std::string& node, const std::string& cpu) {
  return BoundPod::FromJson(
      {{"metadata", {{"namespace", "other"}, {"name", "filler"}}},
       {"spec",
        {{"nodeName", node}, {"containers", {{{"resources", {{"requests", {{"cpu", cpu}}}}}}}}}},
       {"status", {{"phase", "Running"}}}});
}

MigrationTargetPolicy Policy(const std::string& spec) {
  PolicyParse p = ParsePolicy({{"apiVersion", "migration-target.kubevirt.io/v1alpha1"},
                               {"kind", "MigrationTargetPolicy"},
                               {"metadata", {{"name", "p"}}},
                               {"spec", json::parse(spec)}});
  REQUIRE(p.causes.empty());
  return *p.policy;
}

std::vector<std::string> PlacedOn(const DrainPlan& plan) {
  std::vector<std::string> out;
  out.reserve(plan.vms.size());
  for (const VmPlan& v : plan.vms) out.push_back(v.placed_on);
  return out;
}

TEST_CASE("drain plan: capacity runs out mid-drain, one VM after another") {
  // b takes two 2-cpu VMs, c one; the drained node a has room but is never a target.
  const std::vector<NodeInfo> nodes{Node("a", "64", "a"), Node("b", "4", "b"), Node("c", "2", "c")};
  const int count = GENERATE(1, 2, 3, 4, 5);
  CAPTURE(count);
  std::vector<DrainVm> vms;
  for (int i = 1; i <= count; ++i) vms.push_back(Vm("vm-" + std::to_string(i)));
  const DrainPlan plan = PlanDrain({.node = "a", .nodes = nodes, .bound = {}}, vms);

  const size_t vm_count = vms.size();
  REQUIRE(plan.vms.size() == vm_count);
  CHECK(plan.leaving == std::min<size_t>(vm_count, 3));
  CHECK(plan.staying == vm_count - std::min<size_t>(vm_count, 3));
  CHECK(plan.shut_down == 0);
  // Each VM alone would fit: only the earlier placements fill the nodes.
  // vm-2 goes to c: after it, both have no cpu left but c more memory.
  const std::vector<std::string> order{"b", "c", "b", "", ""};
  CHECK(PlacedOn(plan) == std::vector<std::string>(order.begin(), order.begin() + count));
  for (int i = 3; i < count; ++i) {
    const VmPlan& v = plan.vms[i];
    CHECK(v.fate == Fate::kStays);
    CHECK(v.reason == StayReason::kNoPlace);
    CHECK(v.fitting.empty());
    REQUIRE(v.nodes.size() == 2);  // the drained node is not judged
    CHECK(v.nodes[0].node == "b");
    CHECK(v.nodes[0].reasons == std::vector<Reason>{{ReasonKind::kInsufficientResource,
                                                     "insufficient cpu (requested 2, free 0)"}});
    CHECK(v.nodes[1].node == "c");
    CHECK(v.nodes[1].reasons[0].kind == ReasonKind::kInsufficientResource);
  }
  if (count >= 3) {
    REQUIRE(plan.nodes.size() == 2);
    CHECK(plan.nodes[0].node == "b");
    CHECK(plan.nodes[0].incoming == 2);
    CHECK(plan.nodes[0].requested.cpu_milli == 4000);
    CHECK(plan.nodes[0].requested.pods == 2);
    CHECK(plan.nodes[0].allocatable.cpu_milli == 4000);
    CHECK(plan.nodes[1].node == "c");
    CHECK(plan.nodes[1].incoming == 1);
  }
}

TEST_CASE("drain plan: pods already bound count, and the least allocated node is taken") {
  // c is larger, but mostly full: b has the larger free share until it is as full as c.
  const std::vector<NodeInfo> nodes{Node("a", "8", "a"), Node("b", "8", "b"), Node("c", "16", "c")};
  const std::vector<BoundPod> bound{Bound("c", "10")};
  const std::vector<DrainVm> vms{Vm("vm-1"), Vm("vm-2"), Vm("vm-3")};
  const DrainPlan plan = PlanDrain({.node = "a", .nodes = nodes, .bound = bound}, vms);
  // Free cpu after it: b 6/8 vs c 4/16; b 4/8 vs c 4/16; b 2/8 = c 4/16, and c has more
  // memory left (the filler requests none).
  CHECK(PlacedOn(plan) == std::vector<std::string>{"b", "b", "c"});
  REQUIRE(plan.nodes.size() == 2);
  CHECK(plan.nodes[0].requested.cpu_milli == 4000);
  CHECK(plan.nodes[1].requested.cpu_milli == 12000);
  CHECK(plan.nodes[1].incoming == 1);
}

TEST_CASE("drain plan: a policy's term that excludes the only free node") {
  // b is full; c is free but the policy allows rack b only.
  const std::vector<NodeInfo> nodes{Node("a", "8", "a"), Node("b", "4", "b"), Node("c", "8", "c")};
  const std::vector<BoundPod> bound{Bound("b", "3")};
  const MigrationTargetPolicy to_b = Policy(
      R"({"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}})");
  const std::vector<DrainVm> vms{Vm("steered", "2", &to_b), Vm("free", "2")};
  const DrainPlan plan = PlanDrain({.node = "a", .nodes = nodes, .bound = bound}, vms);

  const VmPlan& steered = plan.vms[0];
  CHECK(steered.fate == Fate::kStays);
  CHECK(steered.reason == StayReason::kNoPlace);
  CHECK(steered.policy == &to_b);
  REQUIRE(steered.nodes.size() == 2);
  CHECK(steered.nodes[0].reasons ==
        std::vector<Reason>{
            {ReasonKind::kInsufficientResource, "insufficient cpu (requested 2, free 1)"}});
  REQUIRE(steered.nodes[1].reasons.size() == 1);
  CHECK(steered.nodes[1].reasons[0].kind == ReasonKind::kExcludedByAddedTerm);
  CHECK_FALSE(steered.nodes[1].allowed_by_term);
  // Without the policy the other VM leaves to c.
  CHECK(plan.vms[1].fate == Fate::kLeaves);
  CHECK(plan.vms[1].placed_on == "c");
  CHECK(plan.vms[1].fitting == std::vector<std::string>{"c"});
  CHECK(plan.leaving == 1);
  CHECK(plan.staying == 1);
}

TEST_CASE("drain plan: maxInboundPerNode limits the migrations in flight, not the drain") {
  // b is the least allocated by far: without a limit every VM goes there.
  const MigrationTargetPolicy limited = Policy(
      R"({"maxInboundPerNode": 1, "addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["a"]}]}})");
  const MigrationTargetPolicy unlimited = Policy(
      R"({"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["a"]}]}})");
  struct Row {
    bool limit;  // the VMs' policy has maxInboundPerNode 1
    int parallel_outbound;
    bool c_cordoned;
    std::vector<std::string> placed;
    std::vector<bool> waits;
  };
  const Row row = GENERATE(
      // Two in flight at a time: the second avoids b while the first is inbound there.
      Row{true, 2, false, {"b", "c", "b", "c"}, {false, false, false, false}},
      // Three in flight: each window of three sees both nodes taken: the third waits,
      // and goes where the model puts it once one completed (b, the least allocated).
      Row{true, 3, false, {"b", "c", "b", "b"}, {false, false, true, true}},
      // One at a time: nothing else is in flight, the limit never holds a pod.
      Row{true, 1, false, {"b", "b", "b", "b"}, {false, false, false, false}},
      // No limit.
      Row{false, 2, false, {"b", "b", "b", "b"}, {false, false, false, false}},
      // b the only node: every VM after the first waits for the one before, and leaves.
      Row{true, 2, true, {"b", "b", "b", "b"}, {false, true, true, true}});
  CAPTURE(row.limit, row.parallel_outbound, row.c_cordoned);
  const MigrationTargetPolicy* policy = row.limit ? &limited : &unlimited;
  const std::vector<NodeInfo> nodes{Node("a", "8", "a"), Node("b", "64", "b"),
                                    Node("c", "8", "c",
                                         {{"spec", {{"unschedulable", row.c_cordoned}}},
                                          {"status", {{"allocatable", {{"memory", "16Gi"}}}}}})};
  std::vector<DrainVm> vms;
  for (int i = 1; i <= 4; ++i) vms.push_back(Vm("vm-" + std::to_string(i), "1", policy));
  const DrainPlan plan = PlanDrain(
      {.node = "a", .nodes = nodes, .bound = {}, .parallel_outbound = row.parallel_outbound}, vms);
  CHECK(PlacedOn(plan) == row.placed);
  std::vector<bool> waits;
  waits.reserve(plan.vms.size());
  for (const VmPlan& v : plan.vms) waits.push_back(v.waits_for_inbound);
  CHECK(waits == row.waits);
  CHECK(plan.leaving == 4);
}

const std::string kNotShared =
    "cannot migrate VMI: PVC disk is not shared, live migration requires that all PVCs must be "
    "shared (using ReadWriteMany access mode)";

TEST_CASE("drain plan: the fate by eviction strategy, migratability and PDB") {
  struct Row {
    EvictionStrategy strategy;
    bool migratable;
    bool pdb;
    bool pod;
    Fate fate;
    StayReason reason;
    std::string detail;
  };
  const Row row = GENERATE(
      Row{EvictionStrategy::kLiveMigrate, true, false, true, Fate::kLeaves, StayReason::kNone, ""},
      // A migration's eviction is refused by virt-api before any PDB is asked.
      Row{EvictionStrategy::kLiveMigrate, true, true, true, Fate::kLeaves, StayReason::kNone, ""},
      Row{EvictionStrategy::kLiveMigrate, false, false, true, Fate::kStays,
          StayReason::kNotMigratable, "LiveMigratable=False DisksNotLiveMigratable: " + kNotShared},
      Row{EvictionStrategy::kLiveMigrate, true, false, false, Fate::kStays,
          StayReason::kNotModelled,
          "no running virt-launcher pod to model the migration target on"},
      Row{EvictionStrategy::kLiveMigrateIfPossible, true, false, true, Fate::kLeaves,
          StayReason::kNone, ""},
      Row{EvictionStrategy::kLiveMigrateIfPossible, false, false, true, Fate::kShutDown,
          StayReason::kNone, "LiveMigratable=False DisksNotLiveMigratable: " + kNotShared},
      Row{EvictionStrategy::kLiveMigrateIfPossible, false, true, true, Fate::kStays,
          StayReason::kPdb, "PodDisruptionBudget keep allows no disruption"},
      Row{EvictionStrategy::kNone, true, false, true, Fate::kShutDown, StayReason::kNone, ""},
      Row{EvictionStrategy::kNone, true, true, true, Fate::kStays, StayReason::kPdb,
          "PodDisruptionBudget keep allows no disruption"},
      Row{EvictionStrategy::kExternal, true, false, true, Fate::kStays, StayReason::kExternal,
          "waits for an external controller to move it"});
  CAPTURE(ToString(row.strategy), row.migratable, row.pdb, row.pod);
  const std::vector<NodeInfo> nodes{Node("a", "8", "a"), Node("b", "8", "b")};
  DrainVm vm = Vm("vm");
  vm.strategy = row.strategy;
  vm.migratability.migratable = row.migratable;
  if (!row.migratable) {
    vm.migratability.reason = "DisksNotLiveMigratable";
    vm.migratability.message = kNotShared;
  }
  if (row.pdb) vm.blocking_pdb = "keep";
  if (!row.pod) vm.pod.reset();
  const DrainPlan plan = PlanDrain({.node = "a", .nodes = nodes, .bound = {}}, {&vm, 1});
  REQUIRE(plan.vms.size() == 1);
  const VmPlan& v = plan.vms[0];
  CHECK(v.fate == row.fate);
  CHECK(v.reason == row.reason);
  CHECK(v.detail == row.detail);
  CHECK(v.placed_on == (row.fate == Fate::kLeaves ? "b" : ""));
  const bool migrates = (row.strategy == EvictionStrategy::kLiveMigrate ||
                         row.strategy == EvictionStrategy::kLiveMigrateIfPossible) &&
                        row.migratable;
  CHECK(v.migrates == migrates);
  CHECK(plan.leaving + plan.staying + plan.shut_down == 1);
  // Only a VM that migrates with a modelled pod is judged node by node.
  CHECK(v.nodes.size() == (v.migrates && row.pod ? 1u : 0u));
}

TEST_CASE("drain plan: a VM that stays or is shut down takes no capacity") {
  const std::vector<NodeInfo> nodes{Node("a", "8", "a"), Node("b", "2", "b")};
  DrainVm off = Vm("off");
  off.strategy = EvictionStrategy::kNone;
  const std::vector<DrainVm> vms{off, Vm("on")};
  const DrainPlan plan = PlanDrain({.node = "a", .nodes = nodes, .bound = {}}, vms);
  CHECK(plan.vms[0].fate == Fate::kShutDown);
  CHECK(plan.vms[1].placed_on == "b");
  CHECK(plan.shut_down == 1);
  CHECK(plan.leaving == 1);
}

TEST_CASE("drain plan: a placed target pod counts for anti-affinity of the next") {
  // Each VM keeps off a node holding another pod labelled app=db (hostname anti-affinity).
  json pod = LauncherPod("db-1", "1");
  pod["metadata"]["labels"]["app"] = "db";
  pod["spec"]["affinity"] =
      json::parse(R"({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
      {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}})");
  std::vector<DrainVm> vms;
  for (const char* name : {"db-1", "db-2", "db-3"}) {
    DrainVm v = Vm(name);
    pod["metadata"]["name"] = std::string("virt-launcher-") + name;
    pod["metadata"]["labels"]["kubevirt.io/created-by"] = std::string(name) + "-uid";
    v.pod = TargetPod::FromJson(pod);
    vms.push_back(std::move(v));
  }
  const std::vector<NodeInfo> nodes{Node("a", "8", "a"), Node("b", "8", "b"), Node("c", "8", "c")};
  // The running pods on a hold the label too: the drained node is never a target anyway.
  const DrainPlan plan = PlanDrain({.node = "a", .nodes = nodes, .bound = {}}, vms);
  CHECK(PlacedOn(plan) == std::vector<std::string>{"b", "c", ""});
  CHECK(plan.vms[2].reason == StayReason::kNoPlace);
}

TEST_CASE("eviction strategy: the VMI's, else the KubeVirt CR's, else None") {
  const json cr = {{"spec", {{"configuration", {{"evictionStrategy", "LiveMigrate"}}}}}};
  const json own = {{"spec", {{"evictionStrategy", "External"}}}};
  const json unset = {{"spec", json::object()}};
  const json odd = {{"spec", {{"evictionStrategy", "Sometimes"}}}};
  CHECK(StrategyOf(own, DrainConfig::FromKubeVirt(cr)) == EvictionStrategy::kExternal);
  CHECK(StrategyOf(unset, DrainConfig::FromKubeVirt(cr)) == EvictionStrategy::kLiveMigrate);
  CHECK(StrategyOf(odd, DrainConfig::FromKubeVirt(cr)) == EvictionStrategy::kLiveMigrate);
  CHECK(StrategyOf(unset, DrainConfig::FromKubeVirt(json())) == EvictionStrategy::kNone);
  CHECK(StrategyOf(unset, DrainConfig::FromKubeVirt(
                              {{"spec", {{"configuration", {{"evictionStrategy", 3}}}}}})) ==
        EvictionStrategy::kNone);
  for (EvictionStrategy s :
       {EvictionStrategy::kNone, EvictionStrategy::kLiveMigrate,
        EvictionStrategy::kLiveMigrateIfPossible, EvictionStrategy::kExternal}) {
    CHECK(ParseEvictionStrategy(ToString(s)) == s);
  }
}

TEST_CASE("drain config: migrations in flight per node, bounded by the cluster's") {
  CHECK(DrainConfig::FromKubeVirt(json()).parallel_outbound == 2);
  auto with = [](const json& migrations) {
    return DrainConfig::FromKubeVirt({{"spec", {{"configuration", {{"migrations", migrations}}}}}})
        .parallel_outbound;
  };
  CHECK(with({{"parallelOutboundMigrationsPerNode", 4}}) == 4);
  CHECK(with({{"parallelOutboundMigrationsPerNode", 9}}) == 5);
  CHECK(with({{"parallelOutboundMigrationsPerNode", 9}, {"parallelMigrationsPerCluster", 7}}) == 7);
  CHECK(with({{"parallelOutboundMigrationsPerNode", 0}}) == 2);
  CHECK(with({{"parallelOutboundMigrationsPerNode", "4"}}) == 2);
}

TEST_CASE("migratability: only LiveMigratable=True migrates") {
  CHECK_FALSE(Migratability::Of({{"status", json::object()}}).migratable);
  const Migratability yes = Migratability::Of(json::parse(
      R"({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "LiveMigratable", "status": "True"}]}})"));
  CHECK(yes.migratable);
  CHECK(yes.reason.empty());
  const Migratability no = Migratability::Of(json::parse(
      R"({"status": {"conditions": [{"type": "LiveMigratable", "status": "False", "reason": "HostDeviceNotLiveMigratable", "message": "VMI uses a non-migratable host device"}]}})"));
  CHECK_FALSE(no.migratable);
  CHECK(no.reason == "HostDeviceNotLiveMigratable");
  CHECK(no.message == "VMI uses a non-migratable host device");
}

TEST_CASE("blocking PDB: selects the pod and allows no disruption") {
  const json labels = {{"kubevirt.io", "virt-launcher"}, {"app", "db"}};
  auto pdb = [](const std::string& name, const json& selector, const json& status) {
    json p = {{"metadata", {{"name", name}}}, {"spec", {{"selector", selector}}}};
    if (!status.is_null()) p["status"] = status;
    return p;
  };
  const json zero = {{"disruptionsAllowed", 0}};
  const json one = {{"disruptionsAllowed", 1}};
  struct Row {
    json pdb;
    std::optional<std::string> blocking;
  };
  const Row row = GENERATE_COPY(
      Row{pdb("x", {{"matchLabels", {{"app", "db"}}}}, zero), "x"},
      Row{pdb("x", {{"matchLabels", {{"app", "db"}}}}, one), std::nullopt},
      Row{pdb("x", {{"matchLabels", {{"app", "web"}}}}, zero), std::nullopt},
      Row{pdb("x", json::object(), zero), "x"},                         // {} selects every pod
      Row{pdb("x", nullptr, zero), std::nullopt},                       // null selects none
      Row{pdb("x", {{"matchLabels", {{"app", "db"}}}}, nullptr), "x"},  // not counted yet
      Row{pdb("x",
              json::parse(
                  R"({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]})"),
              zero),
          "x"});
  CAPTURE(row.pdb.dump());
  const std::vector<json> pdbs{row.pdb};
  CHECK(BlockingPdb(labels, pdbs) == row.blocking);
}

}  // namespace
}  // namespace kmt::api
