#include "api/pod_volumes.h"

#include <catch2/catch.hpp>
#include <map>

namespace kmt::api {
namespace {

using json = nlohmann::json;

json Pvc(const json& patch = json::object()) {
  json pvc = {{"metadata",
               {{"name", "disk-a"},
                {"namespace", "vms"},
                {"annotations", {{"pv.kubernetes.io/bind-completed", "yes"}}}}},
              {"spec", {{"volumeName", "pv-1"}, {"storageClassName", "local"}}},
              {"status", {{"phase", "Bound"}}}};
  pvc.merge_patch(patch);
  return pvc;
}

json Unbound(const json& patch = json::object()) {
  json pvc = Pvc({{"metadata", {{"annotations", nullptr}}},
                  {"spec", {{"volumeName", nullptr}}},
                  {"status", {{"phase", "Pending"}}}});
  pvc.merge_patch(patch);
  return pvc;
}

json Class(const std::string& mode) {
  return {{"metadata", {{"name", "local"}}}, {"volumeBindingMode", mode}};
}

const json kWffc = Class("WaitForFirstConsumer");
const json kImmediate = Class("Immediate");

json Pv(const json& patch = json::object()) {
  json pv = {
      {"metadata", {{"name", "pv-1"}}},
      {"spec",
       {{"claimRef", {{"kind", "PersistentVolumeClaim"}, {"namespace", "vms"}, {"name", "disk-a"}}},
        {"nodeAffinity",
         {{"required",
           {{"nodeSelectorTerms",
             {{{"matchExpressions",
                {{{"key", "kubernetes.io/hostname"},
                  {"operator", "In"},
                  {"values", {"node-1"}}}}}}}}}}}}}}};
  pv.merge_patch(patch);
  return pv;
}

TEST_CASE("PodClaimsFromJson: claim names, each once, in order; odd JSON reads as none") {
  auto [what, pod, want] = GENERATE(table<std::string, json, std::vector<std::string>>({
      {"none", json::object(), {}},
      {"volumes not an array", {{"spec", {{"volumes", "x"}}}}, {}},
      {"claims and other volumes",
       {{"spec",
         {{"volumes",
           {{{"name", "disk"}, {"persistentVolumeClaim", {{"claimName", "disk-a"}}}},
            {{"name", "cloudinit"}, {"cloudInitNoCloud", json::object()}},
            {{"name", "disk2"}, {"persistentVolumeClaim", {{"claimName", "disk-b"}}}},
            {{"name", "again"}, {"persistentVolumeClaim", {{"claimName", "disk-a"}}}},
            "not an object",
            {{"name", "odd"}, {"persistentVolumeClaim", "x"}}}}}}},
       {"disk-a", "disk-b"}},
      {"claim without a name",
       {{"spec", {{"volumes", {{{"persistentVolumeClaim", json::object()}}}}}}},
       {""}},
      {"claim with an odd name",
       {{"spec", {{"volumes", {{{"persistentVolumeClaim", {{"claimName", 5}}}}}}}}},
       {""}},
  }));
  CAPTURE(what);
  std::vector<std::string> got;
  for (const auto& c : PodClaimsFromJson(pod)) {
    CHECK(c.resolution.state == ClaimState::kNotLookedUp);
    got.push_back(c.name);
  }
  CHECK(got == want);
}

TEST_CASE("ResolveClaim: the states of VolumeBinding's PreFilter and checkBoundClaims") {
  const json pvc_bound = Pvc();
  const json pv = Pv();
  auto [what, pvc, sc, volume,
        want] = GENERATE_REF(table<std::string, std::optional<json>, std::optional<json>,
                                   std::optional<json>, ClaimState>({
      {"PVC missing", std::nullopt, std::nullopt, std::nullopt, ClaimState::kMissing},
      {"bound", pvc_bound, std::nullopt, pv, ClaimState::kBound},
      {"bound, PV missing", pvc_bound, std::nullopt, std::nullopt, ClaimState::kVolumeMissing},
      {"bound, the PV's claimRef has the claim's uid", Pvc({{"metadata", {{"uid", "u-1"}}}}),
       std::nullopt, Pv({{"spec", {{"claimRef", {{"uid", "u-1"}}}}}}), ClaimState::kBound},
      {"the PV's claimRef names a claim of another namespace", pvc_bound, std::nullopt,
       Pv({{"spec", {{"claimRef", {{"namespace", "other"}}}}}}), ClaimState::kVolumeNotClaimed},
      {"the PV's claimRef names another claim", pvc_bound, std::nullopt,
       Pv({{"spec", {{"claimRef", {{"name", "disk-b"}}}}}}), ClaimState::kVolumeNotClaimed},
      {"the PV's claimRef has another uid (the claim was recreated)",
       Pvc({{"metadata", {{"uid", "u-2"}}}}), std::nullopt,
       Pv({{"spec", {{"claimRef", {{"uid", "u-1"}}}}}}), ClaimState::kVolumeNotClaimed},
      {"the PV has no claimRef (Available)", pvc_bound, std::nullopt,
       Pv({{"spec", {{"claimRef", nullptr}}}}), ClaimState::kVolumeNotClaimed},
      {"Lost wins over bound", Pvc({{"status", {{"phase", "Lost"}}}}), std::nullopt, pv,
       ClaimState::kLost},
      {"being deleted", Pvc({{"metadata", {{"deletionTimestamp", "2025-01-01T00:00:00Z"}}}}),
       std::nullopt, pv, ClaimState::kDeleting},
      {"volumeName without bind-completed: pre-bound, immediate",
       Pvc({{"metadata", {{"annotations", nullptr}}}}), kWffc, pv, ClaimState::kNotBound},
      {"bind-completed without volumeName", Pvc({{"spec", {{"volumeName", nullptr}}}}), kImmediate,
       pv, ClaimState::kNotBound},
      {"unbound, Immediate class", Unbound(), kImmediate, std::nullopt, ClaimState::kNotBound},
      {"unbound, class missing: Immediate", Unbound(), std::nullopt, std::nullopt,
       ClaimState::kNotBound},
      {"unbound, no class: Immediate", Unbound({{"spec", {{"storageClassName", nullptr}}}}), kWffc,
       std::nullopt, ClaimState::kNotBound},
      {"unbound, WaitForFirstConsumer", Unbound(), kWffc, std::nullopt,
       ClaimState::kWaitForFirstConsumer},
      {"unbound, class from the beta annotation (empty: Immediate)",
       Unbound(
           {{"metadata", {{"annotations", {{"volume.beta.kubernetes.io/storage-class", ""}}}}}}),
       kWffc, std::nullopt, ClaimState::kNotBound},
      {"odd JSON: not bound", json::array(), kWffc, pv, ClaimState::kNotBound},
  }));
  CAPTURE(what);
  const ClaimResolution r =
      ResolveClaim(pvc ? &*pvc : nullptr, sc ? &*sc : nullptr, volume ? &*volume : nullptr);
  CHECK(r.state == want);
  if (want == ClaimState::kBound) {
    CHECK(r.volume == "pv-1");
    REQUIRE(r.node_affinity);
    CHECK(r.node_affinity->terms.size() == 1);
  } else {
    CHECK_FALSE(r.node_affinity);
    CHECK(r.zones.empty());
  }
}

TEST_CASE("StorageClassToRead and VolumeToRead name what ResolveClaim needs") {
  CHECK(StorageClassToRead(Pvc()) == "");
  CHECK(VolumeToRead(Pvc()) == "pv-1");
  CHECK(StorageClassToRead(Unbound()) == "local");
  CHECK(VolumeToRead(Unbound()) == "");
  CHECK(StorageClassToRead(Unbound(
            {{"metadata",
              {{"annotations", {{"volume.beta.kubernetes.io/storage-class", "beta"}}}}}})) ==
        "beta");
  CHECK(VolumeToRead(Pvc({{"metadata", {{"annotations", nullptr}}}})) == "");
  CHECK(StorageClassToRead(json(5)) == "");
  CHECK(VolumeToRead(json(nullptr)) == "");
}

TEST_CASE("ResolveClaim: a bound PV's node affinity and zone labels (VolumeZone)") {
  const json pvc = Pvc();
  auto [what, pv, affinity, zones] =
      GENERATE(table<std::string, json, bool, std::vector<ZoneLabel>>({
          {"affinity, no labels", Pv(), true, {}},
          {"no nodeAffinity", Pv({{"spec", {{"nodeAffinity", nullptr}}}}), false, {}},
          {"nodeAffinity without required",
           Pv({{"spec", {{"nodeAffinity", {{"required", nullptr}}}}}}),
           false,
           {}},
          {"the four keys, in VolumeZone's order; other labels ignored",
           Pv({{"metadata",
                {{"labels",
                  {{"topology.kubernetes.io/region", "r1"},
                   {"topology.kubernetes.io/zone", "a"},
                   {"failure-domain.beta.kubernetes.io/region", "r1"},
                   {"failure-domain.beta.kubernetes.io/zone", "b"},
                   {"topology.kubernetes.io/rack", "x"}}}}}}),
           true,
           {{"failure-domain.beta.kubernetes.io/zone", {"b"}},
            {"failure-domain.beta.kubernetes.io/region", {"r1"}},
            {"topology.kubernetes.io/zone", {"a"}},
            {"topology.kubernetes.io/region", {"r1"}}}},
          {"a __-separated set, trimmed, sorted, unique",
           Pv({{"metadata", {{"labels", {{"topology.kubernetes.io/zone", "c__ a__b__a"}}}}}}),
           true,
           {{"topology.kubernetes.io/zone", {"a", "b", "c"}}}},
          {"an empty part: the label is ignored",
           Pv({{"metadata",
                {{"labels",
                  {{"topology.kubernetes.io/zone", "a____b"},
                   {"topology.kubernetes.io/region", ""},
                   {"failure-domain.beta.kubernetes.io/zone", "a__ "}}}}}}),
           true,
           {}},
          {"a label that is no string",
           Pv({{"metadata", {{"labels", {{"topology.kubernetes.io/zone", 1}}}}}}),
           true,
           {}},
      }));
  CAPTURE(what);
  const ClaimResolution r = ResolveClaim(&pvc, nullptr, &pv);
  CHECK(r.state == ClaimState::kBound);
  CHECK(r.node_affinity.has_value() == affinity);
  CHECK(r.zones == zones);
}

TEST_CASE("ResolveClaims reads only what each claim needs") {
  std::map<std::string, json> objects = {
      {"claim/disk-a", Pvc()},
      {"volume/pv-1", Pv()},
      {"claim/disk-b", Unbound()},
      {"class/local", kWffc},
      {"claim/disk-c", Pvc({{"spec", {{"volumeName", "pv-gone"}}}})},
  };
  std::vector<std::string> reads;
  VolumeReader read = [&](VolumeObject kind, const std::string& name) -> std::optional<json> {
    const std::string key = (kind == VolumeObject::kClaim          ? "claim/"
                             : kind == VolumeObject::kStorageClass ? "class/"
                                                                   : "volume/") +
                            name;
    reads.push_back(key);
    auto it = objects.find(key);
    if (it == objects.end()) return std::nullopt;
    return it->second;
  };
  std::vector<PodClaim> claims = {
      {"disk-a", {}}, {"disk-b", {}}, {"disk-c", {}}, {"disk-x", {}}, {"", {}}};
  ResolveClaims(claims, read);
  CHECK(reads == std::vector<std::string>{"claim/disk-a", "volume/pv-1", "claim/disk-b",
                                          "class/local", "claim/disk-c", "volume/pv-gone",
                                          "claim/disk-x"});
  CHECK(claims[0].resolution.state == ClaimState::kBound);
  CHECK(claims[1].resolution.state == ClaimState::kWaitForFirstConsumer);
  CHECK(claims[2].resolution.state == ClaimState::kVolumeMissing);
  CHECK(claims[2].resolution.volume == "pv-gone");
  CHECK(claims[3].resolution.state == ClaimState::kMissing);
  CHECK(claims[4].resolution.state == ClaimState::kMissing);

  SECTION("an exception from a read propagates; later claims stay unresolved") {
    std::vector<PodClaim> two = {{"disk-a", {}}, {"disk-b", {}}};
    VolumeReader failing = [](VolumeObject, const std::string&) -> std::optional<json> {
      throw std::runtime_error("boom");
    };
    CHECK_THROWS_WITH(ResolveClaims(two, failing), "boom");
    CHECK(two[1].resolution.state == ClaimState::kNotLookedUp);
  }
}

TEST_CASE("GaTopologyKey maps the beta keys") {
  CHECK(GaTopologyKey(kLabelZoneBeta) == kLabelZone);
  CHECK(GaTopologyKey(kLabelRegionBeta) == kLabelRegion);
  CHECK(GaTopologyKey(kLabelZone) == kLabelZone);
  CHECK(GaTopologyKey("x") == "x");
}

}  // namespace
}  // namespace kmt::api
