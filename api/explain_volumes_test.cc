// The explainer's volume filters (VolumeBinding, VolumeZone: api/pod_volumes.h), apart
// from explain_test.cc so the two grow without touching each other.
#include <catch2/catch.hpp>

#include "api/explain.h"
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
using K = ReasonKind;

// KubeVirt's target pod (namespace "vms" is the fixture's).
TargetPod Pod() { return TargetPod::FromJson(ReadTestJson("api/testdata/and/one_term.pod.json")); }

NodeInfo Node(const std::string& name, const json& labels = json::object()) {
  json l = {{"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS", "true"},
            {"kubernetes.io/arch", "amd64"},
            {"kubernetes.io/hostname", name},
            {"kubevirt.io/schedulable", "true"},
            {"topology.kubernetes.io/zone", "a"}};
  l.merge_patch(labels);
  return NodeInfo::FromJson({{"metadata", {{"name", name}, {"labels", l}}},
                             {"status",
                              {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
                               {"allocatable",
                                {{"cpu", "16"},
                                 {"memory", "64Gi"},
                                 {"pods", "110"},
                                 {"devices.kubevirt.io/kvm", "1k"},
                                 {"devices.kubevirt.io/tun", "1k"},
                                 {"devices.kubevirt.io/vhost-net", "1k"},
                                 {"ephemeral-storage", "100Gi"}}}}}});
}

PodClaim Claim(const std::string& name, ClaimState state, const std::string& volume = "") {
  PodClaim c{name, {}};
  c.resolution.state = state;
  c.resolution.volume = volume;
  return c;
}

PodClaim BoundTo(const std::string& name, const std::string& volume,
                 std::optional<NodeSelector> affinity, std::vector<ZoneLabel> zones = {}) {
  PodClaim c = Claim(name, ClaimState::kBound, volume);
  c.resolution.node_affinity = std::move(affinity);
  c.resolution.zones = std::move(zones);
  return c;
}

NodeSelector One(NodeSelectorRequirement r) { return NodeSelector{{{{std::move(r)}, {}}}}; }

std::vector<Reason> Why(const TargetPod& pod, const NodeInfo& node) {
  const std::vector<NodeInfo> nodes{node};
  Explainer e(pod, nullptr, "node-src", nodes, {});
  const NodeExplanation x = e.Explain(0);
  ReasonMask mask = 0;
  for (const auto& r : x.reasons) mask |= Bit(r.kind);
  CHECK(e.Evaluate(0) == mask);  // the hot path agrees with the texts
  return x.reasons;
}

const std::string kPv1 = "PersistentVolume pv-1 (claim vms/disk-a)";

TEST_CASE("Explainer: a claim the scheduler refuses keeps the pod off every node") {
  auto [what, claim, want] = GENERATE(table<std::string, PodClaim, std::string>({
      {"missing", Claim("disk-a", ClaimState::kMissing), "claim vms/disk-a not found"},
      {"not bound", Claim("disk-a", ClaimState::kNotBound), "claim vms/disk-a is not bound"},
      {"pre-bound, not bound yet", Claim("disk-a", ClaimState::kNotBound, "pv-1"),
       "claim vms/disk-a is not bound"},
      {"being deleted", Claim("disk-a", ClaimState::kDeleting),
       "claim vms/disk-a is being deleted"},
      {"Lost", Claim("disk-a", ClaimState::kLost, "pv-1"),
       "claim vms/disk-a lost its PersistentVolume pv-1"},
      {"Lost without a volume", Claim("disk-a", ClaimState::kLost), "claim vms/disk-a is Lost"},
      {"bound to a missing PV", Claim("disk-a", ClaimState::kVolumeMissing, "pv-1"),
       kPv1 + " not found"},
  }));
  CAPTURE(what);
  TargetPod pod = Pod();
  pod.claims = {claim};
  for (const char* node : {"node-1", "node-2"}) {
    CHECK(Why(pod, Node(node)) == std::vector<Reason>{{K::kVolumeClaim, want}});
  }
}

TEST_CASE("Explainer: claims not looked up or waiting for the first consumer are not checked") {
  TargetPod pod = Pod();
  pod.claims = {Claim("disk-a", ClaimState::kNotLookedUp),
                Claim("disk-b", ClaimState::kWaitForFirstConsumer)};
  CHECK(Why(pod, Node("node-1")).empty());
}

TEST_CASE("Explainer: a bound PV's node affinity (labels only, as CheckNodeAffinity)") {
  const NodeSelectorRequirement host1{"kubernetes.io/hostname", "In", {"node-1"}};
  const NodeSelectorRequirement zone_b{"topology.kubernetes.io/zone", "In", {"b"}};
  auto [what, affinity, node, want] =
      GENERATE_REF(table<std::string, std::optional<NodeSelector>, std::string, std::string>({
          {"no required affinity", std::nullopt, "node-1", ""},
          {"its node", One(host1), "node-1", ""},
          {"another node", One(host1), "node-2",
           kPv1 + " node affinity `kubernetes.io/hostname In [node-1]` excludes it"},
          {"another zone", One(zone_b), "node-1",
           kPv1 + " node affinity `topology.kubernetes.io/zone In [b]` excludes it"},
          {"terms are ORed", NodeSelector{{{{zone_b}, {}}, {{host1}, {}}}}, "node-1", ""},
          {"each failing term", NodeSelector{{{{zone_b}, {}}, {{host1}, {}}}}, "node-2",
           kPv1 + " node affinity `topology.kubernetes.io/zone In [b]` or `kubernetes.io/hostname "
                  "In [node-1]` excludes it"},
          // The node is matched without its name: a valid matchFields requirement is skipped.
          {"matchFields naming another node are skipped",
           NodeSelector{{{{}, {{"metadata.name", "In", {"node-9"}}}}}}, "node-1", ""},
          {"matchFields that do not parse: the term matches nothing",
           NodeSelector{{{{}, {{"metadata.name", "In", {"node-1", "node-2"}}}}}}, "node-1",
           kPv1 + " node affinity `metadata.name In [node-1, node-2]` excludes it"},
          {"an empty term matches nothing", NodeSelector{{{}}}, "node-1",
           kPv1 + " node affinity `(empty term)` excludes it"},
          {"no terms", NodeSelector{}, "node-1", kPv1 + " node affinity has no terms"},
      }));
  CAPTURE(what);
  TargetPod pod = Pod();
  pod.claims = {BoundTo("disk-a", "pv-1", affinity)};
  const auto got = Why(pod, Node(node));
  if (want.empty()) {
    CHECK(got.empty());
  } else {
    CHECK(got == std::vector<Reason>{{K::kVolumeNodeAffinity, want}});
  }
}

TEST_CASE("Explainer: VolumeZone matches a PV's zone/region labels against the node's") {
  const std::string zone = "topology.kubernetes.io/zone";
  const std::string zone_beta = "failure-domain.beta.kubernetes.io/zone";
  const std::string region = "topology.kubernetes.io/region";
  auto [what, zones, node_labels,
        want] = GENERATE_REF(table<std::string, std::vector<ZoneLabel>, json, std::string>({
      {"same zone", {{zone, {"a"}}}, json::object(), ""},
      {"one of the PV's zones", {{zone, {"a", "b"}}}, json::object(), ""},
      {"another zone",
       {{zone, {"b", "c"}}},
       json::object(),
       kPv1 + " is in topology.kubernetes.io/zone [b, c], the node in a"},
      {"the node has another topology label but not this one",
       {{region, {"r1"}}},
       json::object(),
       kPv1 + " is in topology.kubernetes.io/region [r1], the node has no such label"},
      {"a node without any topology label passes",
       {{zone, {"b"}}},
       {{"topology.kubernetes.io/zone", nullptr}},
       ""},
      {"a beta key on the PV reads the node's GA label", {{zone_beta, {"a"}}}, json::object(), ""},
      {"a beta key on the PV prefers the node's beta label",
       {{zone_beta, {"a"}}},
       {{"failure-domain.beta.kubernetes.io/zone", "b"}},
       kPv1 + " is in failure-domain.beta.kubernetes.io/zone [a], the node in b"},
      {"a GA key on the PV does not read the node's beta label",
       {{zone, {"a"}}},
       {{"topology.kubernetes.io/zone", nullptr}, {"failure-domain.beta.kubernetes.io/zone", "a"}},
       kPv1 + " is in topology.kubernetes.io/zone [a], the node has no such label"},
      {"every label must match",
       {{zone, {"a"}}, {region, {"r1"}}},
       {{"topology.kubernetes.io/region", "r2"}},
       kPv1 + " is in topology.kubernetes.io/region [r1], the node in r2"},
  }));
  CAPTURE(what);
  TargetPod pod = Pod();
  pod.claims = {BoundTo("disk-a", "pv-1", std::nullopt, zones)};
  const auto got = Why(pod, Node("node-1", node_labels));
  if (want.empty()) {
    CHECK(got.empty());
  } else {
    CHECK(got == std::vector<Reason>{{K::kVolumeZone, want}});
  }
}

TEST_CASE("Explainer: volume reasons come last, after the others, one per PV") {
  TargetPod pod = Pod();
  pod.claims = {Claim("disk-x", ClaimState::kMissing),
                BoundTo("disk-a", "pv-1", One({"kubernetes.io/hostname", "In", {"node-9"}}),
                        {{"topology.kubernetes.io/zone", {"b"}}}),
                BoundTo("disk-b", "pv-2", One({"disktype", "Exists", {}}))};
  NodeInfo node = Node("node-1", {{"kubevirt.io/schedulable", "false"}});
  CHECK(Why(pod, node) ==
        std::vector<Reason>{
            {K::kNodeSelectorMismatch,
             "VM's own nodeSelector `kubevirt.io/schedulable=true` not matched"},
            {K::kVolumeClaim, "claim vms/disk-x not found"},
            {K::kVolumeNodeAffinity,
             kPv1 + " node affinity `kubernetes.io/hostname In [node-9]` excludes it"},
            {K::kVolumeNodeAffinity,
             "PersistentVolume pv-2 (claim vms/disk-b) node affinity `disktype Exists` excludes "
             "it"},
            {K::kVolumeZone, kPv1 + " is in topology.kubernetes.io/zone [b], the node in a"},
        });
}

TEST_CASE("WhyNeverFits: a bound PV's node affinity is permanent, the rest of volumes is not") {
  TargetPod pod = Pod();
  const NodeSelectorTerm any{{{"kubernetes.io/arch", "In", {"amd64"}}}, {}};
  const std::vector<NodeInfo> nodes{Node("node-1"),
                                    Node("node-2", {{"topology.kubernetes.io/zone", "b"}})};
  auto never = [&] { return Explainer(pod, &any, "node-src", nodes, {}).WhyNeverFits(); };

  SECTION("a local PV on another node excludes every node for good") {
    pod.claims = {BoundTo("disk-a", "pv-1", One({"kubernetes.io/hostname", "In", {"node-src"}}))};
    CHECK(never() ==
          "every node the added term allows is out for good: node-1: " + kPv1 +
              " node affinity `kubernetes.io/hostname In [node-src]` excludes it; node-2: " + kPv1 +
              " node affinity `kubernetes.io/hostname In [node-src]` excludes it");
  }
  SECTION("a PV that allows one of the nodes keeps the answer open") {
    pod.claims = {BoundTo("disk-a", "pv-1", One({"topology.kubernetes.io/zone", "In", {"b"}}))};
    CHECK_FALSE(never());
  }
  SECTION("PV zone labels can be edited") {
    pod.claims = {
        BoundTo("disk-a", "pv-1", std::nullopt, {{"topology.kubernetes.io/zone", {"c"}}})};
    CHECK_FALSE(never());
  }
  SECTION("a claim not bound or not found may be bound or created") {
    pod.claims = {Claim("disk-a", ClaimState::kNotBound)};
    CHECK_FALSE(never());
    pod.claims = {Claim("disk-a", ClaimState::kVolumeMissing, "pv-1")};
    CHECK_FALSE(never());
  }
  SECTION("permanent reasons combine: the PV on one node, the VM's own affinity on the other") {
    pod.claims = {BoundTo("disk-a", "pv-1", One({"topology.kubernetes.io/zone", "In", {"b"}}))};
    pod.mutable_shape().required_affinity =
        NodeSelector{{{{{"topology.kubernetes.io/zone", "In", {"a"}}}, {}}}};
    CHECK(never() ==
          "every node the added term allows is out for good: node-1: " + kPv1 +
              " node affinity `topology.kubernetes.io/zone In [b]` excludes it; node-2: VM's own "
              "affinity `topology.kubernetes.io/zone In [a]` excludes it");
  }
}

}  // namespace
}  // namespace kmt::api
