#include "api/pod_volumes.h"

#include <algorithm>

#include "base/json.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;

constexpr std::string_view kAnnBindCompleted = "pv.kubernetes.io/bind-completed";
constexpr std::string_view kAnnBetaStorageClass = "volume.beta.kubernetes.io/storage-class";
constexpr std::string_view kZoneDelimiter = "__";  // cloud-provider LabelMultiZoneDelimiter

bool Bound(const json& pvc) {
  const json& annotations = base::At(base::At(pvc, "metadata"), "annotations");
  return !base::StringAt(base::At(pvc, "spec"), "volumeName").empty() && annotations.is_object() &&
         annotations.contains(kAnnBindCompleted);
}

// The PV controller's IsVolumeBoundToClaim: the PV's claimRef names the claim (and its uid,
// when the claimRef has one).
bool VolumeBoundTo(const json& pv, const json& pvc) {
  const json& ref = base::At(base::At(pv, "spec"), "claimRef");
  const json& meta = base::At(pvc, "metadata");
  if (!ref.is_object() || base::StringAt(ref, "name").empty()) return false;
  if (base::StringAt(ref, "name") != base::StringAt(meta, "name") ||
      base::StringAt(ref, "namespace") != base::StringAt(meta, "namespace")) {
    return false;
  }
  const std::string uid = base::StringAt(ref, "uid");
  return uid.empty() || uid == base::StringAt(meta, "uid");
}

std::string_view TrimSpace(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\v\f\r";
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

// LabelZonesToSet: "a__b" → {a, b}; nullopt when a part is empty after trimming.
std::optional<std::vector<std::string>> ZoneSet(std::string_view value) {
  std::vector<std::string> out;
  while (true) {
    const size_t at = value.find(kZoneDelimiter);
    const std::string_view part = TrimSpace(value.substr(0, at));
    if (part.empty()) return std::nullopt;
    out.emplace_back(part);
    if (at == std::string_view::npos) break;
    value.remove_prefix(at + kZoneDelimiter.size());
  }
  std::ranges::sort(out);
  out.erase(std::ranges::unique(out).begin(), out.end());
  return out;
}

}  // namespace

std::string_view GaTopologyKey(std::string_view key) {
  if (key == kLabelZoneBeta) return kLabelZone;
  if (key == kLabelRegionBeta) return kLabelRegion;
  return key;
}

std::vector<PodClaim> PodClaimsFromJson(const json& pod) {
  std::vector<PodClaim> out;
  const json& volumes = base::At(base::At(pod, "spec"), "volumes");
  if (!volumes.is_array()) return out;
  for (const json& v : volumes) {
    const json& pvc = base::At(v, "persistentVolumeClaim");
    if (!pvc.is_object()) continue;
    std::string name = base::StringAt(pvc, "claimName");
    if (std::ranges::any_of(out, [&](const PodClaim& c) { return c.name == name; })) {
      continue;
    }
    out.push_back({std::move(name), {}});
  }
  return out;
}

std::vector<std::vector<std::string>> PodClaimsReads() {
  return {{"spec", "volumes", "persistentVolumeClaim", "claimName"}};
}

std::string StorageClassToRead(const json& pvc) {
  if (!base::StringAt(base::At(pvc, "spec"), "volumeName").empty()) return "";
  const json& beta =
      base::At(base::At(base::At(pvc, "metadata"), "annotations"), kAnnBetaStorageClass);
  if (!beta.is_null()) return beta.is_string() ? beta.get<std::string>() : "";
  return base::StringAt(base::At(pvc, "spec"), "storageClassName");
}

std::string VolumeToRead(const json& pvc) {
  return Bound(pvc) ? base::StringAt(base::At(pvc, "spec"), "volumeName") : "";
}

ClaimResolution ResolveClaim(const json* pvc, const json* storage_class, const json* pv) {
  ClaimResolution r;
  if (pvc == nullptr) {
    r.state = ClaimState::kMissing;
    return r;
  }
  r.volume = base::StringAt(base::At(*pvc, "spec"), "volumeName");
  if (base::StringAt(base::At(*pvc, "status"), "phase") == "Lost") {
    r.state = ClaimState::kLost;
    return r;
  }
  if (!base::At(base::At(*pvc, "metadata"), "deletionTimestamp").is_null()) {
    r.state = ClaimState::kDeleting;
    return r;
  }
  if (!Bound(*pvc)) {
    const bool delayed =
        r.volume.empty() && storage_class != nullptr && !StorageClassToRead(*pvc).empty() &&
        base::StringAt(*storage_class, "volumeBindingMode") == "WaitForFirstConsumer";
    r.state = delayed ? ClaimState::kWaitForFirstConsumer : ClaimState::kNotBound;
    return r;
  }
  if (pv == nullptr) {
    r.state = ClaimState::kVolumeMissing;
    return r;
  }
  if (!VolumeBoundTo(*pv, *pvc)) {
    r.state = ClaimState::kVolumeNotClaimed;
    return r;
  }
  r.state = ClaimState::kBound;
  const json& required = base::At(base::At(base::At(*pv, "spec"), "nodeAffinity"), "required");
  if (required.is_object()) r.node_affinity = NodeSelectorFromJsonLenient(required);
  const json& labels = base::At(base::At(*pv, "metadata"), "labels");
  for (std::string_view key : kTopologyLabels) {
    const json& value = base::At(labels, key);
    if (!value.is_string()) continue;
    if (auto zones = ZoneSet(value.get<std::string>())) {
      r.zones.push_back({std::string(key), std::move(*zones)});
    }
  }
  return r;
}

void ResolveClaims(std::vector<PodClaim>& claims, const VolumeReader& read) {
  for (PodClaim& c : claims) {
    if (c.name.empty()) {
      c.resolution = ResolveClaim(nullptr, nullptr, nullptr);
      continue;
    }
    const std::optional<json> pvc = read(VolumeObject::kClaim, c.name);
    std::optional<json> storage_class, pv;
    if (pvc) {
      if (std::string sc = StorageClassToRead(*pvc); !sc.empty()) {
        storage_class = read(VolumeObject::kStorageClass, sc);
      }
      if (std::string v = VolumeToRead(*pvc); !v.empty()) pv = read(VolumeObject::kVolume, v);
    }
    c.resolution = ResolveClaim(pvc ? &*pvc : nullptr, storage_class ? &*storage_class : nullptr,
                                pv ? &*pv : nullptr);
  }
}

}  // namespace kmt::api
