#include "api/explain.h"

#include <catch2/catch.hpp>
#include <functional>

#include "api/names.h"
#include "base/testing/files.h"

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
using kmt::base::testing::ReadTestJson;

// KubeVirt's target pod (requests: 115m cpu, 2294Mi+60M memory, kvm/tun/vhost-net 1,
// ephemeral-storage 50M; nodeSelector of three labels; affinity: host-model term and the
// anti-affinity to the source pod; tolerations: not-ready/unreachable NoExecute).
TargetPod Pod() { return TargetPod::FromJson(ReadTestJson("api/testdata/and/one_term.pod.json")); }

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
  const int64_t need = pod.requests().memory_bytes;
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
  PodAffinityTerm zone_db;
  zone_db.selector.match_labels = Labels{{"app", "db"}};
  zone_db.topology_key = "topology.kubernetes.io/zone";
  zoned.anti_affinity.push_back(zone_db);
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
  pod.mutable_shape().required_affinity = NodeSelector{
      {{{{"topology.kubernetes.io/zone", "In", {"b"}}, {"kubernetes.io/arch", "Exists", {}}}, {}},
       {{{"gpu", "Exists", {}}}, {{"metadata.name", "In", {"x"}}}}}};
  CHECK(Why(pod, Node("n")) ==
        std::vector<Reason>{{K::kOwnAffinityExcludes,
                             "VM's own affinity `topology.kubernetes.io/zone In [b]` or `gpu "
                             "Exists, metadata.name In [x]` excludes it"}});
  pod.mutable_shape().required_affinity = NodeSelector{};
  CHECK(Why(pod, Node("n")) ==
        std::vector<Reason>{
            {K::kOwnAffinityExcludes, "VM's own required node affinity has no terms"}});
  pod.mutable_shape().required_affinity.reset();
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
  pod.mutable_shape().tolerations = {Toleration::Make(key, op, value, effect)};
  const std::vector<Reason> got = Why(pod, Node("n", {{"spec", {{"taints", {taint}}}}}));
  CHECK(got.empty() == tolerated);
}

TEST_CASE("Tolerating the cordon or readiness taints lifts those reasons") {
  TargetPod pod = Pod();
  pod.mutable_shape().tolerations.push_back(
      Toleration::Make("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"));
  pod.mutable_shape().tolerations.push_back(
      Toleration::Make("node.kubernetes.io/not-ready", "Exists", "", ""));
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
    pod.mutable_shape().required_affinity = NodeSelector{{{{{"gpu", "Exists", {}}}, {}}}};
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
    pod.mutable_shape().required_affinity = NodeSelector{{{{{"gpu", "Exists", {}}}, {}}}};
    const NodeSelectorTerm one{{}, {{"metadata.name", "In", {"node-1"}}}};
    const std::vector<NodeInfo> cordoned{Node("node-1", {{"spec", {{"unschedulable", true}}}})};
    CHECK(never(&one, cordoned) ==
          "every node the added term allows is out for good: node-1: VM's own affinity `gpu "
          "Exists` excludes it");
  }
}

// ---- Inter-pod affinity and topology spread (api/pod_rules.h) ----

constexpr std::string_view kZone = "topology.kubernetes.io/zone";

// A node of zone `zone` ("" for none): "za1" etc.
NodeInfo ZoneNode(const std::string& name, const std::string& zone, const json& patch = {}) {
  json p = patch.is_object() ? patch : json::object();
  p["metadata"]["labels"]["topology.kubernetes.io/zone"] =
      zone.empty() ? json(nullptr) : json(zone);
  return Node(name, p);
}

// A running pod `ns/name` on `node`; `extra` is merged over it (RFC 7386).
BoundPod Running(const std::string& node, const std::string& name, const json& labels,
                 const json& extra = json::object(), const std::string& ns = "vms") {
  json p = {{"metadata", {{"namespace", ns}, {"name", name}, {"labels", labels}}},
            {"spec", {{"nodeName", node}}},
            {"status", {{"phase", "Running"}}}};
  if (extra.is_object()) p.merge_patch(extra);
  return BoundPod::FromJson(p);
}

json AntiAffinity(const json& term) {
  return {
      {"spec",
       {{"affinity",
         {{"podAntiAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {term}}}}}}}}};
}

// The reasons of the given kinds only, node by node (in `nodes` order), checking that the
// hot path agrees with the texts on every node.
std::vector<std::vector<Reason>> Only(const Explainer& e, ReasonMask kinds) {
  std::vector<std::vector<Reason>> out;
  for (size_t i = 0; i < e.node_count(); ++i) {
    const NodeExplanation x = e.Explain(i);
    ReasonMask mask = 0;
    std::vector<Reason> kept;
    for (const auto& r : x.reasons) {
      mask |= Bit(r.kind);
      if (kinds & Bit(r.kind)) kept.push_back(r);
    }
    CHECK(e.Evaluate(i) == mask);
    out.push_back(std::move(kept));
  }
  return out;
}

// Which nodes (by index) have a reason of `kind`.
std::vector<bool> Out(const Explainer& e, ReasonKind kind) {
  std::vector<bool> out;
  out.reserve(e.node_count());
  for (size_t i = 0; i < e.node_count(); ++i) out.push_back((e.Evaluate(i) & Bit(kind)) != 0);
  return out;
}

PodAffinityTerm Term(const Labels& match_labels, std::string_view topology_key) {
  PodAffinityTerm t;
  t.selector.match_labels = match_labels;
  t.topology_key = std::string(topology_key);
  return t;
}

// maxSkew 1 over `topology_key`, DoNotSchedule, selecting `match_labels`.
TopologySpreadConstraint Spread(std::string_view topology_key, const Labels& match_labels) {
  TopologySpreadConstraint c;
  c.max_skew = 1;
  c.topology_key = std::string(topology_key);
  c.do_not_schedule = true;
  c.selector.match_labels = match_labels;
  return c;
}

NamespaceInfo Ns(const std::string& name, const json& labels) {
  return NamespaceInfo::FromJson({{"metadata", {{"name", name}, {"labels", labels}}}});
}

TEST_CASE("Explainer: existing pods' required anti-affinity toward the VM's pod") {
  TargetPod pod = Pod();
  pod.labels = Labels{{"app", "web"}};
  const std::vector<NodeInfo> nodes{ZoneNode("za1", "a"), ZoneNode("za2", "a"),
                                    ZoneNode("zb1", "b"), ZoneNode("none", "")};
  const json zone_web = {{"labelSelector", {{"matchLabels", {{"app", "web"}}}}},
                         {"topologyKey", kZone}};
  auto with = [](json term, const json& patch) {
    term.merge_patch(patch);
    return term;
  };
  struct Row {
    std::string what;
    json term;
    json pod_extra;  // merged over the blocking pod (on za1)
    std::string pod_ns;
    std::vector<NamespaceInfo> namespaces;
    std::vector<bool> out;
  };
  const std::vector<bool> zone_a{true, true, false, false}, none(4, false);
  auto row = GENERATE_REF(values<Row>({
      {"selects the pod: its zone is out, a node without the key is not",
       zone_web,
       {},
       "vms",
       {},
       zone_a},
      {"hostname topology: only its node",
       with(zone_web, {{"topologyKey", "kubernetes.io/hostname"}}),
       {},
       "vms",
       {},
       {true, false, false, false}},
      {"selector does not match the pod",
       with(zone_web, {{"labelSelector", {{"matchLabels", {{"app", "db"}}}}}}),
       {},
       "vms",
       {},
       none},
      {"null labelSelector selects no pod",
       with(zone_web, {{"labelSelector", nullptr}}),
       {},
       "vms",
       {},
       none},
      {"no namespaces: the holder's own namespace only", zone_web, {}, "other", {}, none},
      {"namespaces name the pod's",
       with(zone_web, {{"namespaces", {"vms"}}}),
       {},
       "other",
       {},
       zone_a},
      {"namespaces name others only", with(zone_web, {{"namespaces", {"x"}}}), {}, "vms", {}, none},
      {"empty namespaceSelector: every namespace",
       with(zone_web, {{"namespaceSelector", json::object()}}),
       {},
       "other",
       {},
       zone_a},
      {"namespaceSelector matches the pod's namespace",
       with(zone_web, {{"namespaceSelector", {{"matchLabels", {{"env", "prod"}}}}}}),
       {},
       "other",
       {Ns("vms", {{"env", "prod"}})},
       zone_a},
      {"namespaceSelector does not match it",
       with(zone_web, {{"namespaceSelector", {{"matchLabels", {{"env", "prod"}}}}}}),
       {},
       "other",
       {Ns("vms", {{"env", "dev"}})},
       none},
      {"unknown namespace reads as unlabelled (NotIn matches)",
       with(zone_web, {{"namespaceSelector",
                        {{"matchExpressions",
                          {{{"key", "env"}, {"operator", "NotIn"}, {"values", {"dev"}}}}}}}}),
       {},
       "other",
       {},
       zone_a},
      {"terminal pods do not count",
       zone_web,
       {{"status", {{"phase", "Succeeded"}}}},
       "vms",
       {},
       none},
      {"pods being deleted still count",
       zone_web,
       {{"metadata", {{"deletionTimestamp", "2026-01-01T00:00:00Z"}}}},
       "vms",
       {},
       zone_a},
  }));
  CAPTURE(row.what);
  json extra = AntiAffinity(row.term);
  if (row.pod_extra.is_object()) extra.merge_patch(row.pod_extra);
  const std::vector<BoundPod> bound{Running("za1", "guard", {{"app", "guard"}}, extra, row.pod_ns),
                                    Running("zb1", "plain", {{"app", "web"}})};
  const Explainer e(pod, nullptr, "", nodes, bound, row.namespaces, Disclosure::kEveryNamespace);
  CHECK(Out(e, K::kExistingPodAntiAffinity) == row.out);
  if (row.out[1]) {
    CHECK(Only(e, Bit(K::kExistingPodAntiAffinity))[1] ==
          std::vector<Reason>{{K::kExistingPodAntiAffinity,
                               "pod " + row.pod_ns + "/guard's anti-affinity (topologyKey " +
                                   row.term["topologyKey"].get<std::string>() + ") excludes it"}});
  }
  // Written for the VM's owner (the VMIM's conditions): the same verdicts; a pod of another
  // namespace is counted, not named.
  const Explainer tenant(pod, nullptr, "", nodes, bound, row.namespaces);
  CHECK(Out(tenant, K::kExistingPodAntiAffinity) == row.out);
  if (row.out[1]) {
    const std::string key = row.term["topologyKey"].get<std::string>();
    CHECK(Only(tenant, Bit(K::kExistingPodAntiAffinity))[1] ==
          std::vector<Reason>{
              {K::kExistingPodAntiAffinity,
               row.pod_ns == "vms"
                   ? "pod vms/guard's anti-affinity (topologyKey " + key + ") excludes it"
                   : "the anti-affinity of 1 pod in other namespaces (topologyKey " + key +
                         ") excludes it"}});
  }
}

TEST_CASE("Explainer for the VM's owner: other namespaces' pods counted once each, not named") {
  TargetPod pod = Pod();  // namespace vms
  pod.labels = Labels{{"app", "web"}};
  const std::vector<NodeInfo> nodes{ZoneNode("za1", "a"), ZoneNode("zb1", "b")};
  const json zone_web = {{"labelSelector", {{"matchLabels", {{"app", "web"}}}}},
                         {"topologyKey", kZone},
                         {"namespaces", {"vms"}}};
  const json host_web = {{"labelSelector", {{"matchLabels", {{"app", "web"}}}}},
                         {"topologyKey", "kubernetes.io/hostname"},
                         {"namespaces", {"vms"}}};
  json two_terms = AntiAffinity(zone_web);
  two_terms["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
      .push_back(zone_web);
  const std::vector<BoundPod> bound{
      Running("za1", "secret-a", {{"app", "x"}}, two_terms, "tenant-a"),
      Running("za1", "secret-b", {{"app", "x"}}, AntiAffinity(zone_web), "tenant-b"),
      Running("za1", "secret-c", {{"app", "x"}}, AntiAffinity(host_web), "tenant-b"),
      Running("za1", "mine", {{"app", "x"}}, AntiAffinity(zone_web), "vms")};
  const Explainer tenant(pod, nullptr, "", nodes, bound);
  const std::vector<Reason> want{
      {K::kExistingPodAntiAffinity,
       "pod vms/mine's anti-affinity (topologyKey topology.kubernetes.io/zone) excludes it"},
      {K::kExistingPodAntiAffinity,
       "the anti-affinity of 1 pod in other namespaces (topologyKey kubernetes.io/hostname) "
       "excludes it"},
      {K::kExistingPodAntiAffinity,
       "the anti-affinity of 2 pods in other namespaces (topologyKey topology.kubernetes.io/zone) "
       "excludes it"}};
  const auto got = Only(tenant, Bit(K::kExistingPodAntiAffinity))[0];
  CHECK(got == want);
  for (const Reason& r : got) CHECK(r.text.find("secret") == std::string::npos);
  const Explainer admin(pod, nullptr, "", nodes, bound, {}, Disclosure::kEveryNamespace);
  CHECK(Only(admin, Bit(K::kExistingPodAntiAffinity))[0].size() == 4);
}

TEST_CASE("Explainer: the VM's own required pod affinity") {
  TargetPod pod = Pod();
  pod.labels = Labels{{"app", "web"}};
  const PodAffinityTerm zone_db = Term({{"app", "db"}}, kZone);
  const std::vector<NodeInfo> nodes{ZoneNode("za1", "a"), ZoneNode("za2", "a"),
                                    ZoneNode("zb1", "b"), ZoneNode("none", "")};
  const std::string head =
      "VM's own pod affinity (topologyKey topology.kubernetes.io/zone, selector app=db)";
  const Reason no_pod{K::kOwnPodAffinity, head + " has no matching pod there"};
  const Reason no_key{K::kOwnPodAffinity,
                      head + ": the node has no topology.kubernetes.io/zone label"};

  SECTION("no matching pod anywhere, the VM's pod does not match: every node is out") {
    pod.mutable_shape().pod_affinity = {zone_db};
    const Explainer e(pod, nullptr, "", nodes,
                      std::vector<BoundPod>{Running("za1", "web-1", {{"app", "web"}})});
    CHECK(Only(e, Bit(K::kOwnPodAffinity)) ==
          std::vector<std::vector<Reason>>{{no_pod}, {no_pod}, {no_pod}, {no_key}});
  }
  SECTION("a matching pod: its zone only, and the key is required") {
    pod.mutable_shape().pod_affinity = {zone_db};
    const Explainer e(pod, nullptr, "", nodes,
                      std::vector<BoundPod>{Running("zb1", "db-0", {{"app", "db"}})});
    CHECK(Out(e, K::kOwnPodAffinity) == std::vector<bool>{true, true, false, true});
  }
  SECTION("the first of a group: no pod matches and the VM's pod matches its own terms") {
    pod.mutable_shape().pod_affinity = {zone_db};
    pod.labels = Labels{{"app", "db"}};
    const Explainer e(pod, nullptr, "", nodes, {});
    CHECK(Out(e, K::kOwnPodAffinity) == std::vector<bool>{false, false, false, true});
    // ... but not once some pod matches somewhere.
    const Explainer e2(pod, nullptr, "", nodes,
                       std::vector<BoundPod>{Running("zb1", "db-0", {{"app", "db"}})});
    CHECK(Out(e2, K::kOwnPodAffinity) == std::vector<bool>{true, true, false, true});
  }
  SECTION("a matching pod on a node without the key is not counted (the special case holds)") {
    pod.mutable_shape().pod_affinity = {zone_db};
    pod.labels = Labels{{"app", "db"}};
    const Explainer e(pod, nullptr, "", nodes,
                      std::vector<BoundPod>{Running("none", "db-0", {{"app", "db"}})});
    CHECK(Out(e, K::kOwnPodAffinity) == std::vector<bool>{false, false, false, true});
  }
  SECTION("terms are ANDed: a pod counts only if it matches every term") {
    const PodAffinityTerm host_cache = Term({{"tier", "cache"}}, "kubernetes.io/hostname");
    pod.mutable_shape().pod_affinity = {zone_db, host_cache};
    const std::vector<BoundPod> halves{Running("za1", "db-0", {{"app", "db"}}),
                                       Running("zb1", "cache-0", {{"tier", "cache"}})};
    const Explainer e(pod, nullptr, "", nodes, halves);
    CHECK(Out(e, K::kOwnPodAffinity) == std::vector<bool>{true, true, true, true});
    CHECK(Only(e, Bit(K::kOwnPodAffinity))[0].size() == 2);
    CHECK(Only(e, Bit(K::kOwnPodAffinity))[0][0].text ==
          head + " has no matching pod there (a pod counts only if it matches all 2 terms)");
    std::vector<BoundPod> both = halves;
    both.push_back(Running("zb1", "db-cache", {{"app", "db"}, {"tier", "cache"}}));
    const Explainer e2(pod, nullptr, "", nodes, both);
    CHECK(Out(e2, K::kOwnPodAffinity) == std::vector<bool>{true, true, false, true});
  }
  SECTION("namespaces: the VM's own by default, else the term's or its namespaceSelector's") {
    PodAffinityTerm t = zone_db;
    pod.mutable_shape().pod_affinity = {t};
    const std::vector<BoundPod> elsewhere{
        Running("zb1", "db-0", {{"app", "db"}}, json::object(), "data")};
    CHECK(Out(Explainer(pod, nullptr, "", nodes, elsewhere), K::kOwnPodAffinity) ==
          std::vector<bool>{true, true, true, true});
    pod.mutable_shape().pod_affinity[0].namespaces = {"data"};
    CHECK(Out(Explainer(pod, nullptr, "", nodes, elsewhere), K::kOwnPodAffinity) ==
          std::vector<bool>{true, true, false, true});
    pod.mutable_shape().pod_affinity[0].namespaces.clear();
    pod.mutable_shape().pod_affinity[0].namespace_selector = LabelSelector{{{"team", "x"}}, {}};
    const std::vector<NamespaceInfo> team_x{Ns("data", {{"team", "x"}}), Ns("vms", json::object())};
    CHECK(WantsNamespaces(pod, elsewhere));
    CHECK(Out(Explainer(pod, nullptr, "", nodes, elsewhere, team_x), K::kOwnPodAffinity) ==
          std::vector<bool>{true, true, false, true});
    // Without the namespaces no namespace is selected.
    CHECK(Out(Explainer(pod, nullptr, "", nodes, elsewhere), K::kOwnPodAffinity) ==
          std::vector<bool>{true, true, true, true});
  }
  SECTION("terminal pods are not counted") {
    pod.mutable_shape().pod_affinity = {zone_db};
    const Explainer e(pod, nullptr, "", nodes,
                      std::vector<BoundPod>{Running("zb1", "db-0", {{"app", "db"}},
                                                    {{"status", {{"phase", "Failed"}}}})});
    CHECK(Out(e, K::kOwnPodAffinity) == std::vector<bool>{true, true, true, true});
  }
}

TEST_CASE("Explainer: topology spread constraints (DoNotSchedule)") {
  TargetPod pod = Pod();
  pod.labels = Labels{{"app", "web"}};
  const TopologySpreadConstraint zone = Spread(kZone, {{"app", "web"}});
  const json web = {{"app", "web"}};
  const std::string head = "topology spread (topology.kubernetes.io/zone, maxSkew 1): ";

  SECTION("skew against the emptiest domain, the VM's pod counted if it matches") {
    pod.mutable_shape().topology_spread = {zone};
    const std::vector<NodeInfo> nodes{ZoneNode("za1", "a"), ZoneNode("za2", "a"),
                                      ZoneNode("zb1", "b"), ZoneNode("zc1", "c"),
                                      ZoneNode("none", "")};
    const std::vector<BoundPod> bound{Running("za1", "w1", web), Running("za2", "w2", web),
                                      Running("zb1", "w3", web), Running("none", "w4", web)};
    const Explainer e(pod, nullptr, "", nodes, bound);
    const Reason in_a{K::kTopologySpread,
                      head + "2 matching pods there (3 with the VM's), 0 in the emptiest domain"};
    CHECK(Only(e, Bit(K::kTopologySpread)) ==
          std::vector<std::vector<Reason>>{
              {in_a},
              {in_a},
              {{K::kTopologySpread,
                head + "1 matching pod there (2 with the VM's), 0 in the emptiest domain"}},
              {},
              {{K::kTopologySpread, head + "the node has no topology.kubernetes.io/zone label"}}});
    // The VM's pod outside the selector: a = 2 - 0 > 1, b = 1 fits.
    pod.labels = Labels{{"app", "batch"}};
    CHECK(Out(Explainer(pod, nullptr, "", nodes, bound), K::kTopologySpread) ==
          std::vector<bool>{true, true, false, false, true});
  }
}

TEST_CASE("Explainer: topology spread, who is counted where") {
  TargetPod pod = Pod();
  pod.labels = Labels{{"app", "web"}};
  const TopologySpreadConstraint zone = Spread(kZone, {{"app", "web"}});
  const json web = {{"app", "web"}};
  const std::vector<NodeInfo> abc{ZoneNode("za1", "a"), ZoneNode("zb1", "b"), ZoneNode("zc1", "c")};
  const std::vector<BoundPod> one_each_ab{Running("za1", "w1", web), Running("zb1", "w2", web)};
  struct Row {
    std::string what;
    std::function<void(TopologySpreadConstraint&)> edit;
    std::vector<NodeInfo> nodes;
    std::vector<BoundPod> bound;
    std::vector<bool> out;
  };
  // zc1 does not carry the VM's nodeSelector label kubevirt.io/schedulable=true, or is tainted.
  const std::vector<NodeInfo> c_unselected{
      ZoneNode("za1", "a"), ZoneNode("zb1", "b"),
      ZoneNode("zc1", "c", {{"metadata", {{"labels", {{"kubevirt.io/schedulable", nullptr}}}}}})};
  const std::vector<NodeInfo> c_tainted{
      ZoneNode("za1", "a"), ZoneNode("zb1", "b"),
      ZoneNode("zc1", "c", {{"spec", {{"taints", {{{"key", "k"}, {"effect", "NoSchedule"}}}}}}})};
  auto keep = [](TopologySpreadConstraint&) {};
  auto row = GENERATE_REF(values<Row>({
      {"an empty zone c: min 0, a and b are at skew 2",
       keep,
       abc,
       one_each_ab,
       {true, true, false}},
      {"nodeAffinityPolicy Honor: zone c outside the VM's nodeSelector is not counted",
       keep,
       c_unselected,
       one_each_ab,
       {false, false, false}},
      {"nodeAffinityPolicy Ignore: it is",
       [](TopologySpreadConstraint& c) { c.honor_node_affinity = false; },
       c_unselected,
       one_each_ab,
       {true, true, false}},
      {"nodeTaintsPolicy Ignore (default): the tainted zone c is counted",
       keep,
       c_tainted,
       one_each_ab,
       {true, true, false}},
      {"nodeTaintsPolicy Honor: it is not",
       [](TopologySpreadConstraint& c) { c.honor_node_taints = true; },
       c_tainted,
       one_each_ab,
       {false, false, false}},
      {"minDomains above the domains counted: min is 0",
       [](TopologySpreadConstraint& c) { c.min_domains = 3; },
       c_unselected,
       one_each_ab,
       {true, true, false}},
      {"minDomains met",
       [](TopologySpreadConstraint& c) { c.min_domains = 2; },
       c_unselected,
       one_each_ab,
       {false, false, false}},
      {"terminal, deleted and other-namespace pods are not counted",
       keep,
       abc,
       {Running("za1", "done", web, {{"status", {{"phase", "Succeeded"}}}}),
        Running("za1", "going", web,
                {{"metadata", {{"deletionTimestamp", "2026-01-01T00:00:00Z"}}}}),
        Running("za1", "there", web, json::object(), "other")},
       {false, false, false}},
      {"the VM's own source pod is counted like any other",
       keep,
       abc,
       {Running("za1", "virt-launcher-src", {{"app", "web"}, {"kubevirt.io/created-by", kVmiUid}})},
       {true, false, false}},
      {"an empty selector counts no pod",
       [](TopologySpreadConstraint& c) { c.selector = {}; },
       abc,
       one_each_ab,
       {false, false, false}},
      {"matchLabelKeys: the VM's own label value is ANDed in",
       [](TopologySpreadConstraint& c) {
         c.selector = {};
         c.match_label_keys = {"app", "absent"};
       },
       abc,
       {Running("za1", "w1", web), Running("zb1", "o1", {{"app", "other"}})},
       {true, false, false}},
      {"a null selector matches no pod, not even the VM's",
       [](TopologySpreadConstraint& c) { c.selector_null = true; },
       abc,
       one_each_ab,
       {false, false, false}},
      {"ScheduleAnyway is scoring only",
       [](TopologySpreadConstraint& c) { c.do_not_schedule = false; },
       abc,
       one_each_ab,
       {false, false, false}},
  }));
  CAPTURE(row.what);
  TopologySpreadConstraint c = zone;
  row.edit(c);
  pod.mutable_shape().topology_spread = {c};
  CHECK(Out(Explainer(pod, nullptr, "", row.nodes, row.bound), K::kTopologySpread) == row.out);
}

TEST_CASE("Explainer: topology spread counts only nodes the added term allows (Honor)") {
  TargetPod pod = Pod();
  pod.labels = Labels{{"app", "web"}};
  pod.mutable_shape().topology_spread = {Spread(kZone, {{"app", "web"}})};
  pod.mutable_shape().topology_spread[0].min_domains = 2;
  const std::vector<NodeInfo> nodes{ZoneNode("za1", "a"), ZoneNode("zb1", "b"),
                                    ZoneNode("zc1", "c")};
  const std::vector<BoundPod> bound{Running("za1", "w1", {{"app", "web"}}),
                                    Running("zb1", "w2", {{"app", "web"}})};
  const NodeSelectorTerm ab{{{std::string(kZone), "In", {"a", "b"}}}, {}};
  const Explainer e(pod, &ab, "", nodes, bound);
  CHECK(Out(e, K::kTopologySpread) == std::vector<bool>{false, false, false});
  CHECK(Out(Explainer(pod, nullptr, "", nodes, bound), K::kTopologySpread) ==
        std::vector<bool>{true, true, false});
}

TEST_CASE("WhyNeverFits: inter-pod reasons are never permanent") {
  TargetPod pod = Pod();
  pod.labels = Labels{{"app", "db"}};
  pod.mutable_shape().pod_affinity = {Term({{"app", "cache"}}, kZone)};
  pod.mutable_shape().topology_spread = {Spread(kZone, {{"app", "db"}})};
  const std::vector<NodeInfo> nodes{ZoneNode("za1", "a"), ZoneNode("zb1", "b"),
                                    ZoneNode("none", "")};
  const json guard = {{"labelSelector", {{"matchLabels", {{"app", "db"}}}}},
                      {"topologyKey", "kubernetes.io/hostname"}};
  const std::vector<BoundPod> bound{Running("za1", "guard", {{"app", "x"}}, AntiAffinity(guard)),
                                    Running("zb1", "cache", {{"app", "cache"}}),
                                    Running("zb1", "db-1", {{"app", "db"}})};
  const NodeSelectorTerm all{{{"kubernetes.io/arch", "In", {"amd64"}}}, {}};
  const Explainer e(pod, &all, "", nodes, bound);
  // Every allowed node is out, each only for reasons other pods may change.
  CHECK(e.Evaluate(0) == (Bit(K::kExistingPodAntiAffinity) | Bit(K::kOwnPodAffinity)));
  CHECK(e.Evaluate(1) == Bit(K::kTopologySpread));
  CHECK(e.Evaluate(2) == (Bit(K::kOwnPodAffinity) | Bit(K::kTopologySpread)));
  CHECK_FALSE(e.WhyNeverFits().has_value());
}

TEST_CASE("WantsNamespaces: only a non-null namespaceSelector needs them") {
  TargetPod pod = Pod();
  std::vector<BoundPod> bound{Running("n", "p", json::object())};
  CHECK_FALSE(WantsNamespaces(pod, bound));
  bound.push_back(
      Running("n", "q", json::object(),
              AntiAffinity({{"topologyKey", "k"}, {"namespaceSelector", json::object()}})));
  CHECK(WantsNamespaces(pod, bound));
  bound.pop_back();
  pod.anti_affinity[0].namespace_selector = LabelSelector{};
  CHECK(WantsNamespaces(pod, bound));
}

// A running pod whose cache left `dropped` labels out (kube/managed_fields.h's member).
BoundPod Cut(const std::string& node, const std::string& name, const json& labels, int dropped,
             const std::string& ns = "vms") {
  return Running(node, name, labels,
                 {{"metadata", {{std::string(kMetadataLabelsDropped), dropped}}}}, ns);
}

TEST_CASE("BoundPod: the count of labels the cache left out") {
  CHECK(Cut("n", "p", {{"a", "b"}}, 7).labels_dropped == 7);
  CHECK(Running("n", "p", {{"a", "b"}}).labels_dropped == 0);
  CHECK(
      Running("n", "p", {{"a", "b"}}, {{"metadata", {{std::string(kMetadataLabelsDropped), "7"}}}})
          .labels_dropped == 0);  // not a number: not from the trim
}

TEST_CASE("Explainer: a selector naming a key a cut pod lacks is said, not guessed") {
  TargetPod pod = Pod();  // namespace vms
  pod.labels = Labels{{"app", "web"}};
  const std::vector<NodeInfo> nodes{ZoneNode("za1", "a"), ZoneNode("zb1", "b")};
  PodAffinityTerm zone_db = Term({{"app", "db"}}, kZone);
  pod.anti_affinity = {zone_db};
  SECTION("No cut pod: no note, and Summarize is as before") {
    const std::vector<BoundPod> bound{Running("za1", "db", {{"app", "db"}})};
    const Explainer e(pod, nullptr, "", nodes, bound);
    CHECK(e.LabelsNote().empty());
    CHECK(e.Summarize().find("labels truncated") == std::string::npos);
  }
  SECTION("A cut pod that kept the key is certain; one that lacks it is named") {
    const std::vector<BoundPod> bound{
        Cut("za1", "kept", {{"app", "db"}}, 10),                  // the key is there: certain
        Cut("zb1", "lost", {{"aaa", "x"}}, 40),                   // app may be among the 40
        Cut("zb1", "other-ns", {{"aaa", "x"}}, 40, "tenant-b")};  // term's namespace is vms
    const Explainer e(pod, nullptr, "", nodes, bound);
    CHECK(e.LabelsNote() ==
          "labels truncated: vms/lost carries more labels than the operator caches (8 KiB a "
          "pod), and the VM's pod affinity, anti-affinity or spread selectors name keys left "
          "out, counted here as absent");
    // Counted as absent: zone b stays open, zone a is out by the pod that kept its label.
    CHECK(Out(e, K::kAlreadyRunsThere) == std::vector<bool>{true, false});
    const std::string summary = e.Summarize();
    CHECK(summary.substr(summary.size() - e.LabelsNote().size()) == e.LabelsNote());
  }
  SECTION("Own pod affinity and spread: pods of other namespaces are counted, not named") {
    TargetPod p = pod;
    p.anti_affinity.clear();
    PodAffinityTerm any_ns = Term({{"tier", "cache"}}, kZone);
    any_ns.namespace_selector = LabelSelector{};  // every namespace
    p.mutable_shape().pod_affinity = {any_ns};
    p.mutable_shape().topology_spread = {Spread(kZone, {{"app", "web"}})};
    const std::vector<BoundPod> bound{Running("za1", "cache", {{"tier", "cache"}}),
                                      Cut("za1", "a", {{"aaa", "x"}}, 3, "tenant-a"),
                                      Cut("zb1", "b", {{"aaa", "x"}}, 3, "tenant-b"),
                                      Cut("zb1", "web", {{"aaa", "x"}}, 3)};
    const std::vector<NamespaceInfo> namespaces{
        Ns("vms", json::object()), Ns("tenant-a", json::object()), Ns("tenant-b", json::object())};
    const Explainer tenant(p, nullptr, "", nodes, bound, namespaces);
    CHECK(tenant.LabelsNote().rfind(
              "labels truncated: vms/web and 2 pods in other namespaces carry more labels", 0) ==
          0);
    const Explainer admin(p, nullptr, "", nodes, bound, namespaces, Disclosure::kEveryNamespace);
    CHECK(admin.LabelsNote().rfind(
              "labels truncated: tenant-a/a, tenant-b/b, vms/web carry more labels", 0) == 0);
  }
}

}  // namespace
}  // namespace kmt::api
