#include "cli/policy_explain_cmd.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

json Node(const std::string& name, const std::string& rack, bool cordoned = false) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}, {"rack", rack}}}}},
          {"spec", {{"unschedulable", cordoned}}},
          {"status",
           {{"allocatable", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

json Policy(const std::string& name, const std::string& spec) {
  return {{"apiVersion", "migration-target.kubevirt.io/v1alpha1"},
          {"kind", "MigrationTargetPolicy"},
          {"metadata", {{"name", name}}},
          {"spec", json::parse(spec)}};
}

// The KubeVirt CR: the cluster's eviction strategy (and KubeVirt's migration limits).
void InstallKubeVirt(kube::FakeClient& fake, const std::string& strategy = "LiveMigrate") {
  fake.Create(kube::kKubeVirts, "kubevirt",
              {{"apiVersion", "kubevirt.io/v1"},
               {"kind", "KubeVirt"},
               {"metadata", {{"name", "kubevirt"}, {"namespace", "kubevirt"}}},
               {"spec", {{"configuration", {{"evictionStrategy", strategy}}}}}});
}

// A running, live-migratable VMI on `node` with its virt-launcher pod there (`cpu` requested).
void StartVmi(kube::FakeClient& fake, const std::string& ns, const std::string& name,
              const std::string& node, json labels = json::object(), const std::string& cpu = "1") {
  fake.Create(kube::kVirtualMachineInstances, ns,
              {{"apiVersion", "kubevirt.io/v1"},
               {"kind", "VirtualMachineInstance"},
               {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
               {"spec", json::object()}});
  json vmi = fake.Get(kube::kVirtualMachineInstances, ns, name);
  vmi["status"] = {{"nodeName", node},
                   {"phase", "Running"},
                   {"conditions", {{{"type", "LiveMigratable"}, {"status", "True"}}}}};
  fake.Update(kube::kVirtualMachineInstances, ns, vmi, "status");
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "virt-launcher-" + name},
        {"namespace", ns},
        {"labels",
         {{"kubevirt.io", "virt-launcher"}, {"kubevirt.io/created-by", vmi["metadata"]["uid"]}}}}},
      {"spec",
       {{"nodeName", node},
        {"containers",
         {{{"name", "compute"},
           {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}}}}}};
  fake.Create(kube::kPods, ns, pod);
  json stored = fake.Get(kube::kPods, ns, "virt-launcher-" + name);
  stored["status"] = {{"phase", "Running"}};
  fake.Update(kube::kPods, ns, stored, "status");
}

// Rack a (the node being drained, a-0), rack b (b-1, b-2 cordoned), rack c (c-3); a policy
// "rack a → rack b" that leaves out VMIs labelled tier=db; evictionStrategy LiveMigrate.
void Seed(kube::FakeClient& fake) {
  InstallKubeVirt(fake);
  fake.Create(kube::kNodes, "", Node("a-0", "a"));
  fake.Create(kube::kNodes, "", Node("b-1", "b"));
  fake.Create(kube::kNodes, "", Node("b-2", "b", /*cordoned=*/true));
  fake.Create(kube::kNodes, "", Node("c-3", "c"));
  fake.Create(kube::kMigrationTargetPolicies, "", Policy("rack-a-to-b", R"({
    "match": {"origin": "Evacuation", "sourceNodeSelector": {"matchLabels": {"rack": "a"}},
              "vmiSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}},
    "addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}})"));
  StartVmi(fake, "prod", "web-1", "a-0", {{"tier", "web"}});
  StartVmi(fake, "prod", "db-1", "a-0", {{"tier", "db"}});
  StartVmi(fake, "other", "elsewhere", "c-3");
}

// Every VM can leave: exit 0. The fate lines and the drain summary are the drain plan's
// (issue 39): both VMs fit b-1, so the plan puts both there.
TEST_CASE("policy explain: the policy per VMI, node by node ANDed with its term, a summary") {
  kube::FakeClient fake;
  Seed(fake);
  std::ostringstream out, err;
  const int rc = RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out, err});
  const std::string o = out.str();
  CAPTURE(o, err.str());
  CHECK(rc == 0);
  CHECK(err.str().empty());
  CHECK(o == R"(Node a-0, origin Evacuation: 2 VMIs, 1 MigrationTargetPolicy

prod/db-1: no policy: the scheduler alone decides
  NODE   VERDICT
  b-1    fits
  b-2    cordoned
  c-3    fits
  2 of 3 nodes allowed: b-1, c-3
  leaves: live migration (evictionStrategy LiveMigrate), placed on b-1 in this plan

prod/web-1: policy rack-a-to-b (rack In [b])
  NODE   VERDICT
  b-1    fits
  b-2    cordoned
  c-3    term of policy rack-a-to-b does not match (`rack In [b]`)
  1 of 3 nodes allowed: b-1
  leaves: live migration (evictionStrategy LiveMigrate), placed on b-1 in this plan

Drain of a-0: 2 of 2 VMs can leave; 0 would stay; 0 shut down
Cluster: evictionStrategy LiveMigrate, 2 migrations out of a node at a time (KubeVirt kubevirt/kubevirt)
Nodes after the drain (requested/allocatable):
  NODE   VMS IN   CPU         MEMORY           PODS
  b-1    2        2/8 (25%)   2Gi/16Gi (12%)   2/110 (1%)
)");
}

TEST_CASE("policy explain -o json carries the same verdicts") {
  kube::FakeClient fake;
  Seed(fake);
  std::ostringstream out, err;
  REQUIRE(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "json", fake, {out, err}) == 0);
  const json j = json::parse(out.str());
  CHECK(j["node"] == "a-0");
  CHECK(j["origin"] == "Evacuation");
  CHECK(j["skippedPolicies"] == json::array());
  REQUIRE(j["vmis"].size() == 2);
  const json& web = j["vmis"][1];
  CHECK(web["namespace"] == "prod");
  CHECK(web["name"] == "web-1");
  CHECK(web["policy"]["name"] == "rack-a-to-b");
  CHECK(web["policy"]["priority"] == 0);
  CHECK(web["policy"]["addedNodeSelectorTerm"] ==
        json::parse(R"({"matchExpressions":[{"key":"rack","operator":"In","values":["b"]}]})"));
  CHECK(web["allowedNodes"] == json{"b-1"});
  REQUIRE(web["nodes"].size() == 3);
  CHECK(web["nodes"][2] == json{{"name", "c-3"},
                                {"fits", false},
                                {"reasons",
                                 {"term of policy rack-a-to-b does not match "
                                  "(`rack In [b]`)"}}});
  CHECK(web["summary"] == "1 of 3 nodes allowed: b-1");
  CHECK(web["evictionStrategy"] == "LiveMigrate");
  CHECK(web["fate"] == "leaves");
  CHECK(web["stayReason"].is_null());
  CHECK(web["placedOn"] == "b-1");
  CHECK(web["waitsForInbound"] == false);
  CHECK(j["vmis"][0]["policy"].is_null());
  CHECK_FALSE(j["vmis"][0].contains("error"));
  CHECK(j["drain"]["vmis"] == 2);
  CHECK(j["drain"]["leaving"] == 2);
  CHECK(j["drain"]["staying"] == 0);
  CHECK(j["drain"]["clusterEvictionStrategy"] == "LiveMigrate");
  CHECK(j["drain"]["nodesAfter"] ==
        json::parse(
            R"([{"name": "b-1", "incomingVMs": 2, "cpu": {"requested": "2", "allocatable": "8"},
                         "memory": {"requested": "2Gi", "allocatable": "16Gi"},
                         "pods": {"requested": 2, "allocatable": 110}}])"));
}

TEST_CASE("policy explain: origin, -n, a skipped policy, why no node, a VMI without a pod") {
  kube::FakeClient fake;
  Seed(fake);
  fake.Create(kube::kMigrationTargetPolicies, "",
              Policy("broken", R"({"addedNodeSelectorTerm": {}})"));
  fake.Create(kube::kMigrationTargetPolicies, "", Policy("desched-to-c", R"({
    "priority": 5, "maxInboundPerNode": 3, "match": {"origin": "Descheduler"},
    "addedNodeSelectorTerm": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b-2"]}]}})"));

  SECTION("the descheduler's eviction picks the descheduler's policy, for every VMI") {
    std::ostringstream out, err;
    // b-2, the only node its term allows, is cordoned: no VM can leave (exit 3).
    REQUIRE(RunPolicyExplain("a-0", std::string("prod"), "Descheduler", "", fake, {out, err}) == 3);
    const std::string o = out.str();
    CAPTURE(o);
    CHECK(o.rfind("Node a-0, origin Descheduler: 2 VMIs, 3 MigrationTargetPolicies (1 skipped)\n"
                  "MigrationTargetPolicy \"broken\" is skipped: spec.addedNodeSelectorTerm",
                  0) == 0);
    CHECK(o.find("prod/db-1: policy desched-to-c (metadata.name In [b-2]), at most 3 inbound per "
                 "node (the rest wait gated)\n") != std::string::npos);
    CHECK(o.find("prod/web-1: policy desched-to-c") != std::string::npos);
    // b-2 is the only node the term allows, and it is cordoned.
    CHECK(o.find("  no node allowed of 3 nodes: 2 excluded by the term of policy desched-to-c, "
                 "1 cordoned\n"
                 "  stays, blocks the drain: no node left (evictionStrategy LiveMigrate)\n") !=
          std::string::npos);
    CHECK(o.find("\nDrain of a-0: 0 of 2 VMs can leave; 2 would stay (2 no node left); 0 shut "
                 "down\n") != std::string::npos);
  }

  SECTION("a VMI already marked by the descheduler counts as the descheduler's") {
    json vmi = fake.Get(kube::kVirtualMachineInstances, "prod", "web-1");
    vmi["metadata"]["annotations"] = {{"kubevirt.io/eviction-source", "descheduler"}};
    fake.Update(kube::kVirtualMachineInstances, "prod", vmi);
    std::ostringstream out, err;
    // web-1 now has nowhere to go (exit 3).
    REQUIRE(RunPolicyExplain("a-0", std::string("prod"), "Evacuation", "", fake, {out, err}) == 3);
    CHECK(out.str().find("prod/web-1: policy desched-to-c") != std::string::npos);
    CHECK(out.str().find("prod/db-1: no policy") != std::string::npos);
  }

  SECTION("-n restricts to one namespace; a VMI without its pod is said so") {
    StartVmi(fake, "other", "lone", "a-0");
    fake.Delete(kube::kPods, "other", "virt-launcher-lone");
    std::ostringstream out, err;
    // A VM the plan cannot model is not known to leave: exit 3.
    REQUIRE(RunPolicyExplain("a-0", std::string("other"), "Evacuation", "", fake, {out, err}) == 3);
    CHECK(out.str() == R"(Node a-0, origin Evacuation: 1 VMI, 3 MigrationTargetPolicies (1 skipped)
MigrationTargetPolicy "broken" is skipped: spec.addedNodeSelectorTerm: Required value: must have at least one requirement in matchExpressions or matchFields

other/lone: policy rack-a-to-b (rack In [b])
  cannot explain: no running virt-launcher pod to model the migration target on
  stays, blocks the drain: not modelled (evictionStrategy LiveMigrate)

Drain of a-0: 0 of 1 VM can leave; 1 would stay (1 not modelled); 0 shut down
Cluster: evictionStrategy LiveMigrate, 2 migrations out of a node at a time (KubeVirt kubevirt/kubevirt)
)");
  }
}

TEST_CASE("policy explain: namespaceSelector reads the namespace's labels") {
  kube::FakeClient fake;
  Seed(fake);
  fake.Create(kube::kNamespaces, "",
              {{"apiVersion", "v1"},
               {"kind", "Namespace"},
               {"metadata", {{"name", "prod"}, {"labels", {{"team", "x"}}}}}});
  fake.Create(kube::kMigrationTargetPolicies, "", Policy("team-x", R"({
    "priority": 1, "match": {"namespaceSelector": {"matchLabels": {"team": "x"}}},
    "addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["c"]}]}})"));
  std::ostringstream out, err;
  REQUIRE(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out, err}) == 0);
  CHECK(out.str().find("prod/db-1: policy team-x (rack In [c])") != std::string::npos);
  CHECK(out.str().find("prod/web-1: policy team-x (rack In [c])") != std::string::npos);
}

// A user who may list VMIs only in some namespaces (not cluster-wide, not in "secret").
class NamespacedViewer : public kube::FakeClient {
 public:
  json List(const kube::Resource& r, std::string_view ns, const kube::ListOptions& o) override {
    if (r.resource == kube::kVirtualMachineInstances.resource && (ns.empty() || ns == "secret")) {
      throw kube::KubeError(kube::ErrorKind::kForbidden, "forbidden", 403);
    }
    return FakeClient::List(r, ns, o);
  }
};

TEST_CASE("policy explain: listing VMIs cluster-wide forbidden falls back per namespace") {
  NamespacedViewer fake;
  Seed(fake);
  for (const char* ns : {"prod", "other", "secret"}) {
    fake.Create(kube::kNamespaces, "",
                {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  }
  StartVmi(fake, "secret", "hidden", "a-0");
  std::ostringstream out, err;
  REQUIRE(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out, err}) == 0);
  CAPTURE(out.str());
  CHECK(err.str() == "note: 1 namespace skipped: you may not list virtualmachineinstances there\n");
  CHECK(out.str().find("prod/web-1: policy rack-a-to-b") != std::string::npos);
  CHECK(out.str().find("prod/db-1: no policy") != std::string::npos);
  CHECK(out.str().find("hidden") == std::string::npos);

  // With -n, no fallback: the namespace's own answer.
  std::ostringstream out2, err2;
  CHECK(RunPolicyExplain("a-0", std::string("secret"), "Evacuation", "", fake, {out2, err2}) == 1);
  CHECK(err2.str().find("forbidden") != std::string::npos);
}

TEST_CASE("policy explain: exit 1 with the error when NODE or the policies cannot be read") {
  kube::FakeClient fake;
  Seed(fake);
  std::ostringstream out, err;
  CHECK(RunPolicyExplain("nope", std::nullopt, "Evacuation", "", fake, {out, err}) == 1);
  CHECK(out.str().empty());
  CHECK(err.str() == "Error from server (NotFound): nodes \"nope\" not found\n");

  fake.FailNext(kube::Verb::kList, 1, kube::ErrorKind::kForbidden,
                "migrationtargetpolicies.migration-target.kubevirt.io");
  std::ostringstream out2, err2;
  CHECK(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out2, err2}) == 1);
  CHECK(out2.str().empty());
  CHECK(err2.str().rfind("Error from server (Forbidden): ", 0) == 0);
}

TEST_CASE("policy explain: no VMI on the node, and no other node") {
  kube::FakeClient fake;
  fake.Create(kube::kNodes, "", Node("solo", "a"));
  std::ostringstream out, err;
  CHECK(RunPolicyExplain("solo", std::nullopt, "Evacuation", "", fake, {out, err}) == 0);
  CHECK(out.str() == "Node solo, origin Evacuation: 0 VMIs, 0 MigrationTargetPolicies\n");
  InstallKubeVirt(fake);
  StartVmi(fake, "ns", "vm", "solo");
  std::ostringstream out2, err2;
  CHECK(RunPolicyExplain("solo", std::nullopt, "Evacuation", "", fake, {out2, err2}) == 3);
  CHECK(out2.str() == R"(Node solo, origin Evacuation: 1 VMI, 0 MigrationTargetPolicies

ns/vm: no policy: the scheduler alone decides
  no node allowed: no other node in the cluster
  stays, blocks the drain: no node left (evictionStrategy LiveMigrate)

Drain of solo: 0 of 1 VM can leave; 1 would stay (1 no node left); 0 shut down
Cluster: evictionStrategy LiveMigrate, 2 migrations out of a node at a time (KubeVirt kubevirt/kubevirt)
)");
}

// A pod already bound to `node` (not a VM) requesting `cpu`.
void Filler(kube::FakeClient& fake, const std::string& node, const std::string& cpu) {
  const std::string name = "filler-" + node;
  fake.Create(
      kube::kPods, "infra",
      {{"apiVersion", "v1"},
       {"kind", "Pod"},
       {"metadata", {{"name", name}, {"namespace", "infra"}}},
       {"spec",
        {{"nodeName", node},
         {"containers", {{{"name", "main"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}}}}}});
  json stored = fake.Get(kube::kPods, "infra", name);
  stored["status"] = {{"phase", "Running"}};
  fake.Update(kube::kPods, "infra", stored, "status");
}

// Before maintenance of a-0: b-1 has 3 cpu free, c-3 2 (b-2 cordoned); three 2-cpu VMs with
// the cluster's LiveMigrate, one not live-migratable, one with evictionStrategy None and one
// with None held by a PodDisruptionBudget.
void SeedMaintenance(kube::FakeClient& fake) {
  InstallKubeVirt(fake);
  fake.Create(kube::kNodes, "", Node("a-0", "a"));
  fake.Create(kube::kNodes, "", Node("b-1", "b"));
  fake.Create(kube::kNodes, "", Node("b-2", "b", /*cordoned=*/true));
  fake.Create(kube::kNodes, "", Node("c-3", "c"));
  Filler(fake, "b-1", "5");
  Filler(fake, "c-3", "6");
  for (const char* name : {"app-1", "app-2", "app-3", "gpu-vm", "scratch", "pinned"}) {
    StartVmi(fake, "prod", name, "a-0", json::object(), "2");
  }
  json gpu = fake.Get(kube::kVirtualMachineInstances, "prod", "gpu-vm");
  gpu["status"]["conditions"] = {{{"type", "LiveMigratable"},
                                  {"status", "False"},
                                  {"reason", "HostDeviceNotLiveMigratable"},
                                  {"message", "VMI uses a non-migratable host device"}}};
  fake.Update(kube::kVirtualMachineInstances, "prod", gpu, "status");
  for (const char* name : {"scratch", "pinned"}) {
    json vmi = fake.Get(kube::kVirtualMachineInstances, "prod", name);
    vmi["spec"]["evictionStrategy"] = "None";
    fake.Update(kube::kVirtualMachineInstances, "prod", vmi);
  }
  const json pinned = fake.Get(kube::kVirtualMachineInstances, "prod", "pinned");
  fake.Create(
      kube::kPodDisruptionBudgets, "prod",
      {{"apiVersion", "policy/v1"},
       {"kind", "PodDisruptionBudget"},
       {"metadata", {{"name", "pinned-pdb"}, {"namespace", "prod"}}},
       {"spec",
        {{"minAvailable", 1},
         {"selector", {{"matchLabels", {{"kubevirt.io/created-by", pinned["metadata"]["uid"]}}}}}}},
       {"status", {{"disruptionsAllowed", 0}}}});
}

TEST_CASE("policy explain: the drain plan places VMs one after another; exit 3 when some stay") {
  kube::FakeClient fake;
  SeedMaintenance(fake);
  std::ostringstream out, err;
  const int rc = RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out, err});
  CAPTURE(out.str(), err.str());
  CHECK(rc == 3);
  CHECK(err.str().empty());
  // app-1 takes b-1 (more room left there), app-2 then fits only c-3, app-3 nowhere.
  CHECK(out.str() == R"(Node a-0, origin Evacuation: 6 VMIs, 0 MigrationTargetPolicies

prod/app-1: no policy: the scheduler alone decides
  NODE   VERDICT
  b-1    fits
  b-2    cordoned
  c-3    fits
  2 of 3 nodes allowed: b-1, c-3
  leaves: live migration (evictionStrategy LiveMigrate), placed on b-1 in this plan

prod/app-2: no policy: the scheduler alone decides
  NODE   VERDICT
  b-1    insufficient cpu (requested 2, free 1)
  b-2    cordoned
  c-3    fits
  1 of 3 nodes allowed: c-3
  leaves: live migration (evictionStrategy LiveMigrate), placed on c-3 in this plan

prod/app-3: no policy: the scheduler alone decides
  NODE   VERDICT
  b-1    insufficient cpu (requested 2, free 1)
  b-2    cordoned
  c-3    insufficient cpu (requested 2, free 0)
  no node allowed of 3 nodes: 1 cordoned, 2 insufficient resources
  stays, blocks the drain: no node left (evictionStrategy LiveMigrate)

prod/gpu-vm: no policy: the scheduler alone decides
  stays, blocks the drain: not live-migratable (evictionStrategy LiveMigrate; LiveMigratable=False HostDeviceNotLiveMigratable: VMI uses a non-migratable host device)

prod/pinned: no policy: the scheduler alone decides
  stays, blocks the drain: PodDisruptionBudget (evictionStrategy None; PodDisruptionBudget pinned-pdb allows no disruption)

prod/scratch: no policy: the scheduler alone decides
  shut down: the drain evicts it (evictionStrategy None)

Drain of a-0: 2 of 6 VMs can leave; 3 would stay (1 PodDisruptionBudget, 1 no node left, 1 not live-migratable); 1 shut down
Cluster: evictionStrategy LiveMigrate, 2 migrations out of a node at a time (KubeVirt kubevirt/kubevirt)
Nodes after the drain (requested/allocatable):
  NODE   VMS IN   CPU          MEMORY          PODS
  b-1    1        7/8 (87%)    1Gi/16Gi (6%)   2/110 (1%)
  c-3    1        8/8 (100%)   1Gi/16Gi (6%)   2/110 (1%)
)");

  std::ostringstream jout, jerr;
  REQUIRE(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "json", fake, {jout, jerr}) == 3);
  const json j = json::parse(jout.str());
  CHECK(j["drain"]["leaving"] == 2);
  CHECK(j["drain"]["staying"] == 3);
  CHECK(j["drain"]["shutDown"] == 1);
  REQUIRE(j["vmis"].size() == 6);
  CHECK(j["vmis"][2]["fate"] == "stays");
  CHECK(j["vmis"][2]["stayReason"] == "no node left");
  CHECK(j["vmis"][2]["placedOn"].is_null());
  CHECK(j["vmis"][3]["stayReason"] == "not live-migratable");
  CHECK(j["vmis"][3]["detail"] ==
        "LiveMigratable=False HostDeviceNotLiveMigratable: VMI uses a non-migratable host device");
  CHECK(j["vmis"][4]["stayReason"] == "PodDisruptionBudget");
  CHECK(j["vmis"][5]["fate"] == "shut down");
  CHECK(j["vmis"][5]["evictionStrategy"] == "None");

  std::ostringstream yout, yerr;
  REQUIRE(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "yaml", fake, {yout, yerr}) == 3);
  CHECK(yout.str().find("fate: shut down\n") != std::string::npos);
  CHECK(yout.str().find("leaving: 2\n") != std::string::npos);
}

TEST_CASE("policy explain: a PDB that allows a disruption does not hold the VM") {
  kube::FakeClient fake;
  SeedMaintenance(fake);
  json pdb = fake.Get(kube::kPodDisruptionBudgets, "prod", "pinned-pdb");
  pdb["status"]["disruptionsAllowed"] = 1;
  fake.Update(kube::kPodDisruptionBudgets, "prod", pdb, "status");
  std::ostringstream out, err;
  CHECK(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out, err}) == 3);
  CHECK(out.str().find("prod/pinned: no policy: the scheduler alone decides\n"
                       "  shut down: the drain evicts it (evictionStrategy None)\n") !=
        std::string::npos);
  CHECK(out.str().find("3 would stay") == std::string::npos);
}

// A user who may read neither the KubeVirt CR nor PodDisruptionBudgets.
class NarrowViewer : public kube::FakeClient {
 public:
  json List(const kube::Resource& r, std::string_view ns, const kube::ListOptions& o) override {
    if (r.resource == kube::kKubeVirts.resource ||
        r.resource == kube::kPodDisruptionBudgets.resource) {
      throw kube::KubeError(kube::ErrorKind::kForbidden, "forbidden", 403);
    }
    return FakeClient::List(r, ns, o);
  }
};

TEST_CASE("policy explain: KubeVirt's defaults and no PDB when they cannot be read, with notes") {
  NarrowViewer fake;
  SeedMaintenance(fake);
  std::ostringstream out, err;
  // KubeVirt's default strategy None: every VM without its own is shut down.
  CHECK(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out, err}) == 0);
  CAPTURE(out.str(), err.str());
  CHECK(
      err.str().find(
          "note: cannot read the KubeVirt CR (error: forbidden): KubeVirt's defaults assumed\n") ==
      0);
  CHECK(err.str().find("note: you may not list poddisruptionbudgets in prod: none is assumed to "
                       "hold a VM there\n") != std::string::npos);
  CHECK(out.str().find("Drain of a-0: 0 of 6 VMs can leave; 0 would stay; 6 shut down\n"
                       "Cluster: evictionStrategy None, 2 migrations out of a node at a time "
                       "(KubeVirt's defaults)\n") != std::string::npos);
}

}  // namespace
}  // namespace kmt::cli
