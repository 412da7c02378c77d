#include "api/projections.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "api/names.h"
#include "api/term_and.h"
#include "base/testing/files.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;
using kmt::base::testing::ReadTestJson;
using kmt::base::testing::TestFileStems;

TEST_CASE("NodeInfo keeps name, labels, cordon, taints, readiness and allocatable") {
  const NodeInfo n = NodeInfo::FromJson(ReadTestJson("api/testdata/node.json"));
  CHECK(n.name == "node-3");
  CHECK(n.labels.size() == 12);
  CHECK(*n.labels.Find("topology.kubernetes.io/zone") == "a");
  CHECK(n.unschedulable);
  REQUIRE(n.taints.size() == 2);
  CHECK(*n.taints[0].key == "dedicated");
  CHECK(*n.taints[0].value == "gpu");
  CHECK(n.taints[0].effect == TaintEffect::kNoSchedule);
  CHECK(*n.taints[1].key == "node.kubernetes.io/unreachable");
  CHECK(*n.taints[1].value == "");
  CHECK(n.taints[1].effect == TaintEffect::kNoExecute);
  CHECK(n.ready == ConditionStatus::kTrue);
  CHECK(n.allocatable.cpu_milli == 15500);
  CHECK(n.allocatable.memory_bytes == 63LL << 30);
  CHECK(n.allocatable.pods == 110);
  CHECK(n.allocatable.Scalar(Intern("devices.kubevirt.io/kvm")) == 1000);
  CHECK(n.allocatable.Scalar(Intern("ephemeral-storage")) == 94580335255);
  CHECK(n.allocatable.Scalar(Intern("hugepages-1Gi")) == 0);
  CHECK(n.allocatable.Scalar(Intern("nvidia.com/gpu")) == 0);
}

TEST_CASE("Pod requests count sidecar init containers with the containers (KEP-753)") {
  json pod = ReadTestJson("api/testdata/and/one_term.pod.json");
  // Regular containers: 100m + 15m cpu, 2294Mi + 60M memory.
  pod["spec"]["initContainers"] = json::parse(R"([
      {"name": "console", "restartPolicy": "Always",
       "resources": {"requests": {"cpu": "5m", "memory": "35M"}}},
      {"name": "setup", "resources": {"requests": {"cpu": "100m", "memory": "1M"}}}])");
  const TargetPod p = TargetPod::FromJson(pod);
  // The sidecar runs with the containers: 120m; the setup step runs next to it: 105m.
  CHECK(p.requests().cpu_milli == 120);
  CHECK(p.requests().memory_bytes == 2294LL * 1024 * 1024 + 60000000 + 35000000);
  pod["spec"]["initContainers"][1]["resources"]["requests"]["cpu"] = "1";
  // A larger init step wins, counted next to the sidecar started before it.
  CHECK(TargetPod::FromJson(pod).requests().cpu_milli == 1005);
}

TEST_CASE("TargetPod keeps what the controller and the explainer use") {
  json pod = ReadTestJson("api/testdata/and/one_term.pod.json");
  pod["spec"]["initContainers"] = json::parse(
      R"([{"name": "init", "resources": {"requests": {"cpu": "2", "memory": "40M"}}}])");
  const TargetPod p = TargetPod::FromJson(pod);
  CHECK(p.ns == "vms");
  CHECK(p.name == "virt-launcher-rhel9-x7k2q");
  CHECK(p.uid == "cfad06b0-b6ec-4b1b-9f88-10d009f4c3ab");
  CHECK(p.resource_version == "48213");
  CHECK(p.migration_job_uid() == "5f0e9b8a-2c1d-4e5f-8a9b-0c1d2e3f4a5b");
  CHECK(p.created_by() == "7ac26e32-a799-4eec-9a2a-cc8ae86621b0");
  CHECK(p.migration_job_name == "move-rhel9");
  CHECK(p.node_name == "");
  CHECK(p.phase == "Pending");
  CHECK(p.has_gate);
  CHECK(p.scheduled == ConditionStatus::kFalse);
  CHECK(p.scheduled_reason == "SchedulingGated");
  CHECK(p.scheduled_message == "Scheduling is blocked due to non-empty scheduling gates");
  CHECK(p.tolerations() ==
        std::vector<Toleration>{
            Toleration::Make("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
            Toleration::Make("node.kubernetes.io/unreachable", "Exists", "", "NoExecute")});
  CHECK(p.tolerations()[0].Key() == "node.kubernetes.io/not-ready");
  CHECK(p.tolerations()[0].Value().empty());
  CHECK(Toleration{}.Effect().empty());
  CHECK(p.node_selector().Sorted() ==
        std::vector<std::pair<std::string, std::string>>{
            {"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS", "true"},
            {"kubernetes.io/arch", "amd64"},
            {"kubevirt.io/schedulable", "true"}});
  REQUIRE(p.required_affinity().has_value());
  CHECK(*p.required_affinity() ==
        NodeSelector{
            {{{{"node-labeller.kubevirt.io/obsolete-host-model", "DoesNotExist", {}}}, {}}}});
  REQUIRE(p.anti_affinity.size() == 1);
  CHECK(p.anti_affinity[0].selector.match_labels.Sorted() ==
        std::vector<std::pair<std::string, std::string>>{
            {"kubevirt.io/created-by", "7ac26e32-a799-4eec-9a2a-cc8ae86621b0"}});
  CHECK(p.anti_affinity[0].topology_key == "kubernetes.io/hostname");
  // Containers: 100m + 15m cpu; the init container's 2 cpu is larger.
  CHECK(p.requests().cpu_milli == 2000);
  CHECK(p.requests().memory_bytes == 2294LL * 1024 * 1024 + 60000000);
  CHECK(p.requests().pods == 1);
  CHECK(p.requests().Scalar(Intern("devices.kubevirt.io/kvm")) == 1);
  CHECK(p.requests().Scalar(Intern("ephemeral-storage")) == 50000000);

  SECTION("the patch basis computes the same AND as the full pod") {
    const NodeSelectorTerm term{{}, {{"metadata.name", "In", {"node-3"}}}};
    const json basis = p.PatchBasis();
    REQUIRE(basis.is_object());
    const std::vector<json> from_basis = AndTermIntoPod(basis, term, kSchedulingGate);
    CHECK(json(from_basis) == json(AndTermIntoPod(pod, term, kSchedulingGate)));
    CHECK_NOTHROW(pod.patch(json(from_basis)));
  }
  SECTION("no basis once the gate is gone") {
    pod["spec"]["schedulingGates"] = json::array();
    const TargetPod released = TargetPod::FromJson(pod);
    CHECK_FALSE(released.has_gate);
    CHECK(released.patch_basis().empty());
    CHECK(released.PatchBasis().is_null());
  }
}

TEST_CASE("A gated pod's patch basis keeps only the affinity the AND reads") {
  auto name = GENERATE(from_range(TestFileStems("api/testdata/and", ".pod.json")));
  CAPTURE(name);
  const json pod = ReadTestJson("api/testdata/and/" + name + ".pod.json");
  const TargetPod p = TargetPod::FromJson(pod);
  REQUIRE(p.has_gate);
  // The same operations as from the whole pod, for the golden term and for another one.
  for (const json& t : {ReadTestJson("api/testdata/and/" + name + ".term.json"),
                        json::parse(R"({"matchFields": [{"key": "metadata.name", "operator": "In",
                                        "values": ["node-3"]}]})")}) {
    const NodeSelectorTerm term = *ParseNodeSelectorTerm(t, "").term;
    CHECK(json(AndTermIntoPod(p.PatchBasis(), term, kSchedulingGate)) ==
          json(AndTermIntoPod(pod, term, kSchedulingGate)));
  }
  // The affinity bytes the AND reads, nothing of the pod's anti-affinity unless it is tested
  // whole (no nodeAffinity), and the gates only when they are more than ours.
  const json& affinity = pod["spec"].contains("affinity") ? pod["spec"]["affinity"] : json();
  CHECK(p.patch_basis() == (affinity.is_null() ? "" : AffinityTheAndReads(affinity).dump()));
  if (affinity.contains("nodeAffinity")) {
    CHECK(p.patch_basis().find("podAntiAffinity") == std::string::npos);
  }
  CHECK(p.patch_gates().empty() == (name != "other_gates_kept"));
  CHECK(p.patch_basis().capacity() <= std::max<size_t>(p.patch_basis().size(), 15));  // no spare
}

TEST_CASE("Target pods of one template share one shape; their own values stay their own") {
  json pod = ReadTestJson("api/testdata/and/one_term.pod.json");
  const size_t pooled = TargetPodShape::PoolSize();
  {
    const TargetPod a = TargetPod::FromJson(pod);
    pod["metadata"]["name"] = "virt-launcher-vm-2-x7k2q";
    pod["metadata"]["uid"] = "cfad06b0-b6ec-4b1b-9f88-000000000002";
    pod["metadata"]["labels"]["kubevirt.io/created-by"] = "7ac26e32-0000-0000-0000-000000000002";
    TargetPod b = TargetPod::FromJson(pod);
    CHECK(a.shape_pooled());
    CHECK(&a.shape() == &b.shape());
    CHECK(TargetPodShape::PoolSize() == pooled + 1);
    CHECK(*b.labels.Find("kubevirt.io/created-by") == "7ac26e32-0000-0000-0000-000000000002");
    CHECK(a.labels != b.labels);

    SECTION("a changed shape is the pod's own, and the others keep theirs") {
      b.mutable_shape().required_affinity.reset();
      CHECK_FALSE(b.shape_pooled());
      CHECK_FALSE(b.required_affinity().has_value());
      CHECK(a.required_affinity().has_value());
      CHECK(a.shape_pooled());
      CHECK(TargetPodShape::PoolSize() == pooled + 1);
    }
    SECTION("another template has a shape of its own") {
      pod["spec"]["nodeSelector"]["zone"] = "b";
      const TargetPod c = TargetPod::FromJson(pod);
      CHECK(&c.shape() != &a.shape());
      CHECK(TargetPodShape::PoolSize() == pooled + 2);
      CHECK_FALSE(c == a);
    }
    SECTION("pods are equal by content, shared or not") {
      TargetPod copy = a;
      copy.mutable_shape();
      CHECK(copy == a);
    }
  }
  CHECK(TargetPodShape::PoolSize() == pooled);  // gone with the last pod
}

TEST_CASE("TargetPod keeps its claim names, unresolved (api/pod_volumes.h)") {
  json pod = ReadTestJson("api/testdata/and/one_term.pod.json");
  CHECK(TargetPod::FromJson(pod).claims.empty());
  pod["spec"]["volumes"].push_back(
      {{"name", "rootdisk"}, {"persistentVolumeClaim", {{"claimName", "vm-root"}}}});
  const TargetPod p = TargetPod::FromJson(pod);
  REQUIRE(p.claims.size() == 1);
  CHECK(p.claims[0].name == "vm-root");
  CHECK(p.claims[0].resolution.state == ClaimState::kNotLookedUp);
}

TEST_CASE("MigrationInfo keeps the request, KubeVirt's selector, conditions and nodes") {
  const MigrationInfo m = MigrationInfo::FromJson(ReadTestJson("api/testdata/vmim.json"));
  CHECK(m.ns == "vms");
  CHECK(m.name == "move-rhel9");
  CHECK(m.uid == "5f0e9b8a-2c1d-4e5f-8a9b-0c1d2e3f4a5b");
  CHECK(m.resource_version == "48200");
  CHECK(m.vmi_name == "rhel9");
  CHECK(m.phase == "Scheduling");
  CHECK_FALSE(m.Final());
  CHECK(m.added_term_text ==
        std::optional<std::string>(
            R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["node-3"]}]})"));
  CHECK(m.added_node_selector.Sorted() ==
        std::vector<std::pair<std::string, std::string>>{{"kubernetes.io/arch", "amd64"},
                                                         {"topology.kubernetes.io/zone", "a"}});
  CHECK(m.conditions == std::vector<MigrationCondition>{
                            {"addedNodeSelectorTermApplied", "True", "TermApplied",
                             "target pod carries the term", "", "2026-11-30T01:00:02Z"}});
  CHECK(m.source_node == "node-1");
  CHECK(m.target_node == "node-3");
  CHECK(m.target_pod == "virt-launcher-rhel9-x7k2q");
  CHECK(m.evacuation);
}

TEST_CASE("Final phases") {
  auto [phase, final] = GENERATE(table<std::string, bool>(
      {{"Succeeded", true}, {"Failed", true}, {"Running", false}, {"", false}}));
  MigrationInfo m;
  m.phase = phase;
  CHECK(m.Final() == final);
}

TEST_CASE("BoundPod") {
  const BoundPod b = BoundPod::FromJson(json::parse(R"({
      "metadata": {"namespace": "vms", "labels": {"kubevirt.io/created-by": "u1"}},
      "spec": {"nodeName": "node-1", "containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
      "status": {"phase": "Succeeded"}})"));
  CHECK(b.node_name == "node-1");
  CHECK(b.ns == "vms");
  CHECK(*b.labels.Find("kubevirt.io/created-by") == "u1");
  CHECK(b.requests.cpu_milli == 1000);
  CHECK(b.requests.memory_bytes == 1LL << 30);
  CHECK(b.terminal);
}

TEST_CASE("Pod affinity terms: null, empty and set selectors") {
  struct Row {
    std::string what;
    std::string term;  // JSON of one PodAffinityTerm
    PodAffinityTerm want;
  };
  auto make = [](bool selector_null, std::optional<LabelSelector> ns_selector,
                 std::vector<std::string> namespaces) {
    PodAffinityTerm t;
    t.topology_key = "zone";
    t.selector_null = selector_null;
    t.namespace_selector = std::move(ns_selector);
    t.namespaces = std::move(namespaces);
    return t;
  };
  auto row = GENERATE_REF(values<Row>({
      {"no labelSelector: null", R"({"topologyKey": "zone"})", make(true, std::nullopt, {})},
      {"empty labelSelector", R"({"topologyKey": "zone", "labelSelector": {}})",
       make(false, std::nullopt, {})},
      {"odd labelSelector reads as null", R"({"topologyKey": "zone", "labelSelector": 3})",
       make(true, std::nullopt, {})},
      {"empty namespaceSelector: every namespace",
       R"({"topologyKey": "zone", "labelSelector": {}, "namespaceSelector": {}})",
       make(false, LabelSelector{}, {})},
      {"namespaceSelector null",
       R"({"topologyKey": "zone", "labelSelector": {}, "namespaceSelector": null})",
       make(false, std::nullopt, {})},
      {"namespaces, odd entries skipped",
       R"({"topologyKey": "zone", "labelSelector": {}, "namespaces": ["a", 1, "b"]})",
       make(false, std::nullopt, {"a", "b"})},
  }));
  CAPTURE(row.what);
  json pod = {
      {"spec",
       {{"affinity",
         {{"podAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution", {json::parse(row.term)}}}}}}}}};
  const TargetPod p = TargetPod::FromJson(pod);
  REQUIRE(p.pod_affinity().size() == 1);
  CHECK(p.pod_affinity()[0] == row.want);
}

TEST_CASE("TargetPod keeps its labels, pod affinity and topology spread constraints") {
  const TargetPod p = TargetPod::FromJson(json::parse(R"({
      "metadata": {"namespace": "vms", "labels": {"app": "db", "kubevirt.io/created-by": "u1"}},
      "spec": {
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "cache"},
                               "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]},
             "topologyKey": "zone",
             "namespaceSelector": {"matchLabels": {"team": "x"}}}]}},
        "topologySpreadConstraints": [
            {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "db"}}, "matchLabelKeys": ["pod-template-hash"],
             "minDomains": 3, "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"},
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
             "whenUnsatisfiable": "ScheduleAnyway"},
            {"maxSkew": "x", "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {}, "minDomains": "y", "nodeAffinityPolicy": 5},
            7]}})"));
  CHECK(p.labels.Sorted() == std::vector<std::pair<std::string, std::string>>{
                                 {"app", "db"}, {"kubevirt.io/created-by", "u1"}});
  REQUIRE(p.pod_affinity().size() == 1);
  CHECK(p.pod_affinity()[0].selector.match_labels.Sorted() ==
        std::vector<std::pair<std::string, std::string>>{{"app", "cache"}});
  CHECK(p.pod_affinity()[0].selector.match_expressions ==
        std::vector<NodeSelectorRequirement>{{"tier", "In", {"a"}}});
  REQUIRE(p.pod_affinity()[0].namespace_selector.has_value());
  CHECK(*p.pod_affinity()[0].namespace_selector->match_labels.Find("team") == "x");
  REQUIRE(p.topology_spread().size() == 3);
  const TopologySpreadConstraint& a = p.topology_spread()[0];
  CHECK(a.max_skew == 2);
  CHECK(a.topology_key == "zone");
  CHECK(a.do_not_schedule);
  CHECK_FALSE(a.selector_null);
  CHECK(*a.selector.match_labels.Find("app") == "db");
  CHECK(a.match_label_keys == std::vector<std::string>{"pod-template-hash"});
  CHECK(a.min_domains == 3);
  CHECK_FALSE(a.honor_node_affinity);
  CHECK(a.honor_node_taints);
  const TopologySpreadConstraint& b = p.topology_spread()[1];
  CHECK_FALSE(b.do_not_schedule);
  CHECK(b.selector_null);
  // Defaults: minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore; odd types
  // read as absent.
  const TopologySpreadConstraint& c = p.topology_spread()[2];
  CHECK(c.max_skew == 0);
  CHECK(c.min_domains == 1);
  CHECK(c.honor_node_affinity);
  CHECK_FALSE(c.honor_node_taints);
}

TEST_CASE("BoundPod keeps its name, required anti-affinity and deletion") {
  const BoundPod b = BoundPod::FromJson(json::parse(R"({
      "metadata": {"namespace": "vms", "name": "db-0", "deletionTimestamp": "2026-01-01T00:00:00Z"},
      "spec": {"nodeName": "n", "affinity": {"podAntiAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": [
              {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}],
          "preferredDuringSchedulingIgnoredDuringExecution": [
              {"weight": 1, "podAffinityTerm": {"topologyKey": "x"}}]}}},
      "status": {"phase": "Running"}})"));
  CHECK(b.name == "db-0");
  CHECK(b.deleting);
  REQUIRE(b.anti_affinity.size() == 1);
  CHECK(b.anti_affinity[0].topology_key == "zone");
  const BoundPod plain = BoundPod::FromJson(json::parse(R"({"metadata": {"name": "p"}})"));
  CHECK_FALSE(plain.deleting);
  CHECK(plain.anti_affinity.empty());
  CHECK(plain.anti_affinity.capacity() == 0);
}

TEST_CASE("NamespaceInfo") {
  const NamespaceInfo n = NamespaceInfo::FromJson(
      json::parse(R"({"metadata": {"name": "vms", "labels": {"env": "prod"}}})"));
  CHECK(n.name == "vms");
  CHECK(*n.labels.Find("env") == "prod");
  CHECK(NamespaceInfo::FromJson(json::parse("[]")).name.empty());
}

TEST_CASE("Odd input never throws and leaves defaults") {
  auto text = GENERATE(
      as<std::string>{}, "null", "[]", "7", R"("x")",
      R"({"metadata": 1, "spec": [], "status": "x"})",
      R"({"metadata": {"name": 5, "labels": [], "annotations": {"migration-target.kubevirt.io/added-node-selector-term": 3}},
                           "spec": {"taints": [1, {"key": 2}], "unschedulable": "yes", "containers": {}, "schedulingGates": [3],
                                    "tolerations": "x", "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}},
                           "status": {"conditions": [1, {"type": "Ready", "status": 1}], "allocatable": {"cpu": "lots", "memory": 4}}})");
  CAPTURE(text);
  const json j = json::parse(text);
  const NodeInfo n = NodeInfo::FromJson(j);
  CHECK(n.name.empty());
  CHECK_FALSE(n.unschedulable);
  CHECK(n.ready == ConditionStatus::kUnknown);
  CHECK(n.allocatable == Resources{});
  const TargetPod p = TargetPod::FromJson(j);
  CHECK(p.name.empty());
  CHECK_FALSE(p.has_gate);
  CHECK_FALSE(p.required_affinity().has_value());
  CHECK(p.requests().pods == 1);
  const MigrationInfo m = MigrationInfo::FromJson(j);
  CHECK_FALSE(m.added_term_text.has_value());
  CHECK(m.conditions.size() <= 1);  // the object is kept, its non-string status dropped
  for (const auto& c : m.conditions) CHECK((c.type == "Ready" && c.status.empty()));
  CHECK_NOTHROW(BoundPod::FromJson(j));
  CHECK(p.pod_affinity().empty());
  CHECK(p.topology_spread().empty());
  CHECK_NOTHROW(NamespaceInfo::FromJson(j));
}

TEST_CASE("Resources arithmetic") {
  Resources a;
  a.AddList(json::parse(
      R"({"cpu": "500m", "memory": "1Gi", "devices.kubevirt.io/kvm": "1", "pods": "2"})"));
  Resources b;
  b.AddList(json::parse(
      R"({"cpu": "1", "memory": "512Mi", "devices.kubevirt.io/kvm": "2", "nvidia.com/gpu": "1"})"));
  Resources sum = a;
  sum.Add(b);
  CHECK(sum.cpu_milli == 1500);
  CHECK(sum.memory_bytes == (1LL << 30) + (512LL << 20));
  CHECK(sum.pods == 2);
  CHECK(sum.Scalar(Intern("devices.kubevirt.io/kvm")) == 3);
  CHECK(sum.Scalar(Intern("nvidia.com/gpu")) == 1);
  Resources max = a;
  max.MaxWith(b);
  CHECK(max.cpu_milli == 1000);
  CHECK(max.memory_bytes == 1LL << 30);
  CHECK(max.Scalar(Intern("devices.kubevirt.io/kvm")) == 2);
  CHECK(max.Scalar(Intern("nvidia.com/gpu")) == 1);
}

}  // namespace
}  // namespace kmt::api
