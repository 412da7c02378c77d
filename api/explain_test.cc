#include "api/explain.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

namespace Catch {
template <>
struct StringMaker<kmt::api::Reason> {
  static std::string convert(const kmt::api::Reason& r) {
    return "{" + std::to_string(static_cast<int>(r.kind)) + " " + r.text + "}";
  }
};
}  // namespace Catch

namespace kmt::api {
namespace {

using json = nlohmann::json;

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

// KubeVirt's target pod (requests: 115m cpu, 2294Mi+60M memory, kvm/tun/vhost-net 1,
// ephemeral-storage 50M; nodeSelector of three labels; affinity: host-model term and the
// anti-affinity to the source pod; tolerations: not-ready/unreachable NoExecute).
TargetPod Pod() { return TargetPod::FromJson(ReadJson("api/testdata/and/one_term.pod.json")); }

const std::string kVmiUid = "7ac26e32-a799-4eec-9a2a-cc8ae86621b0";

// A schedulable KubeVirt node; `patch` is merged over it (RFC 7386).
NodeInfo Node(const std::string& name, const json& patch = json::object()) {
  json n = {{"metadata",
             {{"name", name},
              {"labels",
               {{"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS", "true"},
                {"kubernetes.io/arch", "amd64"},
                {"kubernetes.io/hostname", name},
                {"kubevirt.io/schedulable", "true"},
                {"topology.kubernetes.io/zone", "a"}}}}},
            {"spec", json::object()},
            {"status",
             {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
              {"allocatable",
               {{"cpu", "16"},
                {"memory", "64Gi"},
                {"pods", "110"},
                {"devices.kubevirt.io/kvm", "1k"},
                {"devices.kubevirt.io/tun", "1k"},
                {"devices.kubevirt.io/vhost-net", "1k"},
                {"ephemeral-storage", "100Gi"}}}}}};
  n.merge_patch(patch);
  return NodeInfo::FromJson(n);
}

BoundPod Bound(const std::string& node, const json& requests, const json& labels = json::object(),
               const std::string& ns = "vms") {
  return BoundPod::FromJson(
      {{"metadata", {{"namespace", ns}, {"labels", labels}}},
       {"spec", {{"nodeName", node}, {"containers", {{{"resources", {{"requests", requests}}}}}}}},
       {"status", {{"phase", "Running"}}}});
}

std::vector<Reason> Why(const TargetPod& pod, const NodeInfo& node,
                        const std::vector<BoundPod>& bound = {},
                        const NodeSelectorTerm* term = nullptr,
                        std::string_view source = "node-src") {
  const std::vector<NodeInfo> nodes{node};
  Explainer e(pod, term, source, nodes, bound);
  const NodeExplanation x = e.Explain(0);
  // The hot path agrees with the texts.
  ReasonMask mask = 0;
  for (const auto& r : x.reasons) mask |= Bit(r.kind);
  CHECK(e.Evaluate(0) == mask);
  return x.reasons;
}

using K = ReasonKind;

TEST_CASE("Explainer: one row per reason") {
  const TargetPod pod = Pod();
  const json taint_unsched = {{"key", "node.kubernetes.io/unschedulable"},
                              {"effect", "NoSchedule"}};
  const json not_ready_ns = {{"key", "node.kubernetes.io/not-ready"}, {"effect", "NoSchedule"}};
  const json not_ready_ne = {{"key", "node.kubernetes.io/not-ready"}, {"effect", "NoExecute"}};
  auto [what, node, want] = GENERATE_REF(table<std::string, NodeInfo, std::vector<Reason>>({
      {"fits", Node("n"), {}},
      {"cordoned (its taint is not repeated)",
       Node("n", {{"spec", {{"unschedulable", true}, {"taints", {taint_unsched}}}}}),
       {{K::kCordoned, "cordoned"}}},
      {"not Ready (its taints are not repeated)",
       Node("n", {{"spec", {{"taints", {not_ready_ns, not_ready_ne}}}},
                  {"status", {{"conditions", {{{"type", "Ready"}, {"status", "False"}}}}}}}),
       {{K::kNotReady, "not Ready"}}},
      {"Ready unknown",
       Node("n", {{"status", {{"conditions", json::array()}}}}),
       {{K::kNotReady, "not Ready (status Unknown)"}}},
      {"taint with value",
       Node("n",
            {{"spec",
              {{"taints", {{{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}}}}}}),
       {{K::kTaintNotTolerated, "taint dedicated=gpu:NoSchedule not tolerated"}}},
      {"taints: NoExecute listed, PreferNoSchedule ignored",
       Node("n", {{"spec",
                   {{"taints",
                     {{{"key", "maintenance"}, {"effect", "NoExecute"}},
                      {{"key", "soft"}, {"value", "x"}, {"effect", "PreferNoSchedule"}},
                      {{"key", "b"}, {"value", "2"}, {"effect", "NoSchedule"}}}}}}}),
       {{K::kTaintNotTolerated, "taint maintenance:NoExecute not tolerated"},
        {K::kTaintNotTolerated, "taint b=2:NoSchedule not tolerated"}}},
      {"nodeSelector",
       Node("n", {{"metadata",
                   {{"labels",
                     {{"kubevirt.io/schedulable", "false"}, {"kubernetes.io/arch", nullptr}}}}}}),
       {{K::kNodeSelectorMismatch, "VM's own nodeSelector `kubernetes.io/arch=amd64` not matched"},
        {K::kNodeSelectorMismatch,
         "VM's own nodeSelector `kubevirt.io/schedulable=true` not matched"}}},
      {"own affinity (KubeVirt's host-model term)",
       Node("n", {{"metadata",
                   {{"labels", {{"node-labeller.kubevirt.io/obsolete-host-model", "true"}}}}}}),
       {{K::kOwnAffinityExcludes,
         "VM's own affinity `node-labeller.kubevirt.io/obsolete-host-model DoesNotExist` excludes "
         "it"}}},
      {"source node", Node("node-src"), {{K::kAlreadyRunsThere, "the VM already runs there"}}},
      {"insufficient allocatable",
       Node("n", {{"status",
                   {{"allocatable",
                     {{"cpu", "100m"},
                      {"memory", "1Gi"},
                      {"pods", "0"},
                      {"devices.kubevirt.io/kvm", nullptr},
                      {"ephemeral-storage", "10M"}}}}}}),
       {{K::kInsufficientResource, "insufficient cpu (requested 115m, free 100m)"},
        {K::kInsufficientResource, "insufficient memory (requested 2.3Gi, free 1Gi)"},
        {K::kInsufficientResource, "too many pods (0 of 0)"},
        {K::kInsufficientResource, "insufficient devices.kubevirt.io/kvm (requested 1, free 0)"},
        {K::kInsufficientResource,
         "insufficient ephemeral-storage (requested 47.7Mi, free 9.5Mi)"}}},
  }));
  CAPTURE(what);
  // Reasons come out in ReasonKind order; within a kind, in node / pod order (sorted selector).
  std::vector<Reason> got = Why(pod, node);
  CHECK(got == want);
}

TEST_CASE("Explainer: the added term") {
  const TargetPod pod = Pod();
  const NodeSelectorTerm term{{{"topology.kubernetes.io/zone", "In", {"b"}}},
                              {{"metadata.name", "In", {"node-3"}}}};
  const std::vector<NodeInfo> nodes{
      Node("node-1"), Node("node-3"),
      Node("node-4", {{"metadata", {{"labels", {{"topology.kubernetes.io/zone", "b"}}}}}})};
  Explainer e(pod, &term, "node-src", nodes, {});
  const NodeExplanation one = e.Explain(0);
  CHECK_FALSE(one.allowed_by_term);
  CHECK(one.reasons ==
        std::vector<Reason>{{K::kExcludedByAddedTerm,
                             "excluded by the added term `topology.kubernetes.io/zone In [b], "
                             "metadata.name In [node-3]`"}});
  CHECK(e.Explain(1).reasons ==
        std::vector<Reason>{{K::kExcludedByAddedTerm,
                             "excluded by the added term `topology.kubernetes.io/zone In [b]`"}});
  CHECK(e.Explain(2).reasons ==
        std::vector<Reason>{
            {K::kExcludedByAddedTerm, "excluded by the added term `metadata.name In [node-3]`"}});
}

TEST_CASE("Explainer: resources already used by bound pods") {
  const TargetPod pod = Pod();
  const std::vector<BoundPod> bound{
      Bound("n", {{"cpu", "15"}, {"memory", "62Gi"}, {"devices.kubevirt.io/kvm", "1000"}}),
      Bound("n", {{"cpu", "950m"}}),
      Bound("other", {{"cpu", "16"}}),
  };
  CHECK(Why(pod, Node("n"), bound) ==
        std::vector<Reason>{
            {K::kInsufficientResource, "insufficient cpu (requested 115m, free 50m)"},
            {K::kInsufficientResource, "insufficient memory (requested 2.3Gi, free 2Gi)"},
            {K::kInsufficientResource,
             "insufficient devices.kubevirt.io/kvm (requested 1, free 0)"}});
  // Terminal pods do not count.
  std::vector<BoundPod> done = bound;
  for (auto& b : done) b.terminal = true;
  CHECK(Why(pod, Node("n"), done).empty());
  // Free memory exactly equal to the request fits.
  const int64_t need = pod.requests.memory_bytes;
  CHECK(Why(pod, Node("n", {{"status", {{"allocatable", {{"memory", std::to_string(need)}}}}}}))
            .empty());
  CHECK(Why(pod, Node("n", {{"status", {{"allocatable", {{"memory", std::to_string(need - 1)}}}}}}))
            .size() == 1);
}

TEST_CASE("Explainer: KubeVirt's anti-affinity to the source virt-launcher pod") {
  const TargetPod pod = Pod();
  const json vm_labels = {{"kubevirt.io", "virt-launcher"}, {"kubevirt.io/created-by", kVmiUid}};
  // The VM's source pod on node "n" (no source node name given).
  CHECK(Why(pod, Node("n"), {Bound("n", {{"cpu", "1"}}, vm_labels)}, nullptr, "") ==
        std::vector<Reason>{{K::kAlreadyRunsThere, "the VM already runs there"}});
  // Another VM's pod, or the same labels in another namespace, do not count.
  CHECK(Why(pod, Node("n"), {Bound("n", {{"cpu", "1"}}, {{"kubevirt.io/created-by", "other"}})},
            nullptr, "")
            .empty());
  CHECK(Why(pod, Node("n"), {Bound("n", {{"cpu", "1"}}, vm_labels, "elsewhere")}, nullptr, "")
            .empty());
  // A zone-wide anti-affinity term of the VM owner: any node of the zone is out.
  TargetPod zoned = pod;
  zoned.anti_affinity.push_back({{{{"app", "db"}}, {}}, "topology.kubernetes.io/zone", {}});
  const std::vector<NodeInfo> nodes{
      Node("n1"), Node("n2"),
      Node("n3", {{"metadata", {{"labels", {{"topology.kubernetes.io/zone", "b"}}}}}})};
  const std::vector<BoundPod> bound{Bound("n1", json::object(), {{"app", "db"}})};
  Explainer e(zoned, nullptr, "", nodes, bound);
  const std::vector<Reason> zone_reason{
      {K::kAlreadyRunsThere,
       "VM's own pod anti-affinity (topologyKey topology.kubernetes.io/zone) excludes it"}};
  CHECK(e.Explain(0).reasons == zone_reason);
  CHECK(e.Explain(1).reasons == zone_reason);
  CHECK(e.Explain(2).reasons.empty());
}

TEST_CASE("Explainer: the VM's own required affinity prints the failing requirement of each term") {
  TargetPod pod = Pod();
  pod.required_affinity = NodeSelector{
      {{{{"topology.kubernetes.io/zone", "In", {"b"}}, {"kubernetes.io/arch", "Exists", {}}}, {}},
       {{{"gpu", "Exists", {}}}, {{"metadata.name", "In", {"x"}}}}}};
  CHECK(Why(pod, Node("n")) ==
        std::vector<Reason>{{K::kOwnAffinityExcludes,
                             "VM's own affinity `topology.kubernetes.io/zone In [b]` or `gpu "
                             "Exists, metadata.name In [x]` excludes it"}});
  pod.required_affinity = NodeSelector{};
  CHECK(Why(pod, Node("n")) ==
        std::vector<Reason>{
            {K::kOwnAffinityExcludes, "VM's own required node affinity has no terms"}});
  pod.required_affinity.reset();
  CHECK(Why(pod, Node("n")).empty());
}

TEST_CASE("Toleration semantics are Kubernetes'") {
  const json taint = {{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}};
  auto [key, op, value, effect, tolerated] =
      GENERATE(table<std::string, std::string, std::string, std::string, bool>({
          {"dedicated", "Equal", "gpu", "NoSchedule", true},
          {"dedicated", "", "gpu", "NoSchedule", true},  // "" means Equal
          {"dedicated", "Equal", "gpu", "", true},       // empty effect: all effects
          {"dedicated", "Exists", "", "NoSchedule", true},
          {"", "Exists", "", "", true},            // tolerates everything
          {"", "Exists", "", "NoExecute", false},  // ... of that effect only
          {"dedicated", "Equal", "cpu", "NoSchedule", false},
          {"dedicated", "Equal", "gpu", "NoExecute", false},
          {"other", "Exists", "", "", false},
          {"dedicated", "Sometimes", "gpu", "", false},
      }));
  CAPTURE(key, op, value, effect);
  TargetPod pod = Pod();
  pod.tolerations = {Toleration::Make(key, op, value, effect)};
  const std::vector<Reason> got = Why(pod, Node("n", {{"spec", {{"taints", {taint}}}}}));
  CHECK(got.empty() == tolerated);
}

TEST_CASE("Tolerating the cordon or readiness taints lifts those reasons") {
  TargetPod pod = Pod();
  pod.tolerations.push_back(
      Toleration::Make("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"));
  pod.tolerations.push_back(Toleration::Make("node.kubernetes.io/not-ready", "Exists", "", ""));
  CHECK(Why(pod,
            Node("n", {{"spec", {{"unschedulable", true}}},
                       {"status", {{"conditions", {{{"type", "Ready"}, {"status", "False"}}}}}}}))
            .empty());
}

TEST_CASE("Explainer: several reasons at once, in a fixed order") {
  const TargetPod pod = Pod();
  const NodeInfo node =
      Node("node-src", {{"metadata", {{"labels", {{"kubevirt.io/schedulable", "false"}}}}},
                        {"spec",
                         {{"unschedulable", true},
                          {"taints",
                           {{{"key", "node.kubernetes.io/unschedulable"}, {"effect", "NoSchedule"}},
                            {{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}}}}},
                        {"status",
                         {{"conditions", {{{"type", "Ready"}, {"status", "False"}}}},
                          {"allocatable", {{"memory", "1Gi"}}}}}});
  CHECK(Why(pod, node) ==
        std::vector<Reason>{
            {K::kCordoned, "cordoned"},
            {K::kNotReady, "not Ready"},
            {K::kTaintNotTolerated, "taint dedicated=gpu:NoSchedule not tolerated"},
            {K::kNodeSelectorMismatch,
             "VM's own nodeSelector `kubevirt.io/schedulable=true` not matched"},
            {K::kAlreadyRunsThere, "the VM already runs there"},
            {K::kInsufficientResource, "insufficient memory (requested 2.3Gi, free 1Gi)"},
        });
}

TEST_CASE("Summarize lists the allowed nodes by name, bounded") {
  const TargetPod pod = Pod();
  std::vector<NodeInfo> nodes;
  for (int i = 12; i >= 0; --i) {
    nodes.push_back(Node(
        "node-" + std::string(i < 10 ? "0" : "") + std::to_string(i),
        {{"spec", {{"unschedulable", i % 2 == 0}}}, {"metadata", {{"labels", {{"pool", "x"}}}}}}));
  }
  nodes.push_back(Node("zz-outside"));
  const NodeSelectorTerm term{{{"pool", "In", {"x"}}}, {}};
  Explainer e(pod, &term, "node-03", nodes, {});
  const std::vector<NodeExplanation> all = e.ExplainAll();
  REQUIRE(all.size() == 14);
  CHECK(all.front().node == "node-00");
  const std::string all_allowed =
      "node-00: cordoned; node-01: fits; node-02: cordoned; node-03: the VM already runs there; "
      "node-04: cordoned; "
      "node-05: fits; node-06: cordoned; node-07: fits; node-08: cordoned; node-09: fits; "
      "node-10: cordoned; "
      "node-11: fits; node-12: cordoned";
  CHECK(e.Summarize(4) ==
        "node-00: cordoned; node-01: fits; node-02: cordoned; node-03: the VM already runs there; "
        "... and 9 more nodes");
  CHECK(e.Summarize(12) ==
        "node-00: cordoned; node-01: fits; node-02: cordoned; node-03: the VM already runs there; "
        "node-04: cordoned; "
        "node-05: fits; node-06: cordoned; node-07: fits; node-08: cordoned; node-09: fits; "
        "node-10: cordoned; "
        "node-11: fits; ... and 1 more node");
  CHECK(e.Summarize(13) == all_allowed);
  CHECK(e.Summarize(100) == all_allowed);
  CHECK(e.Summarize(1) == "node-00: cordoned; ... and 12 more nodes");
  CHECK(e.Summarize(0) == "... and 13 more nodes");
  // Default bound is 10.
  CHECK(e.Summarize().find("; node-09: fits; ... and 3 more nodes") != std::string::npos);
  const std::vector<NodeInfo> outside{Node("zz-outside")};
  CHECK(Explainer(pod, &term, "", outside, {}).Summarize() == "no node matches the added term");
  CHECK(Explainer(pod, &term, "", {}, {}).Summarize() == "no node matches the added term");
}

TEST_CASE("ListFirst names the first items and counts the rest") {
  CHECK(ListFirst({}, 3) == "");
  CHECK(ListFirst({"a"}, 3) == "a");
  CHECK(ListFirst({"a", "b", "c"}, 3) == "a, b, c");
  CHECK(ListFirst({"a", "b", "c", "d", "e"}, 3) == "a, b, c and 2 more");
  CHECK(ListFirst({"a", "b"}, 0) == " and 2 more");
}

TEST_CASE("WhyNeverFits: only reasons that cannot change during the migration") {
  TargetPod pod = Pod();
  auto never = [&](const NodeSelectorTerm* term, const std::vector<NodeInfo>& nodes) {
    return Explainer(pod, term, "node-src", nodes, {}).WhyNeverFits();
  };
  const NodeSelectorTerm src{{}, {{"metadata.name", "In", {"node-src"}}}};
  const NodeSelectorTerm ghosts{{}, {{"metadata.name", "In", {"gone-1"}}}};
  const NodeSelectorTerm zone_b{{{"topology.kubernetes.io/zone", "In", {"b"}}}, {}};
  const std::vector<NodeInfo> nodes{Node("node-src"), Node("node-1")};

  SECTION("no added term: never permanent") { CHECK_FALSE(never(nullptr, nodes)); }
  SECTION("the term allows only the node the VM runs on") {
    CHECK(never(&src, nodes) ==
          "every node the added term allows is out for good: node-src: the VM already runs there");
  }
  SECTION("the term names only nodes that do not exist") {
    CHECK(never(&ghosts, nodes) ==
          "the added term allows only nodes named gone-1, and no such node exists");
  }
  SECTION("a label term that matches no node now may match a node labelled later") {
    CHECK_FALSE(never(&zone_b, nodes));
  }
  SECTION("every allowed node excluded by the VM's own required affinity") {
    pod.required_affinity = NodeSelector{{{{{"gpu", "Exists", {}}}, {}}}};
    const NodeSelectorTerm any{{{"kubernetes.io/arch", "In", {"amd64"}}}, {}};
    CHECK(never(&any, {Node("node-1")}) ==
          "every node the added term allows is out for good: node-1: VM's own affinity `gpu "
          "Exists` excludes it");
  }
  SECTION("a transient reason on one allowed node keeps the answer open") {
    // (matchFields take one value each: a term allows several nodes by their labels.)
    const NodeSelectorTerm both{{{"kubernetes.io/arch", "In", {"amd64"}}}, {}};
    const std::vector<NodeInfo> cordoned{Node("node-src"),
                                         Node("node-1", {{"spec", {{"unschedulable", true}}}})};
    CHECK_FALSE(never(&both, cordoned));
    const std::vector<NodeInfo> tainted{
        Node("node-src"),
        Node("node-1", {{"spec", {{"taints", {{{"key", "k"}, {"effect", "NoSchedule"}}}}}}})};
    CHECK_FALSE(never(&both, tainted));
    const std::vector<NodeInfo> small{
        Node("node-src"), Node("node-1", {{"status", {{"allocatable", {{"memory", "1Mi"}}}}}})};
    CHECK_FALSE(never(&both, small));
  }
  SECTION("a node out for good and for a transient reason too counts as out for good") {
    pod.required_affinity = NodeSelector{{{{{"gpu", "Exists", {}}}, {}}}};
    const NodeSelectorTerm one{{}, {{"metadata.name", "In", {"node-1"}}}};
    const std::vector<NodeInfo> cordoned{Node("node-1", {{"spec", {{"unschedulable", true}}}})};
    CHECK(never(&one, cordoned) ==
          "every node the added term allows is out for good: node-1: VM's own affinity `gpu "
          "Exists` excludes it");
  }
}

}  // namespace
}  // namespace kmt::api
