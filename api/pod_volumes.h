// api/pod_volumes.h — the target pod's PersistentVolumeClaims as kube-scheduler v1.34.2's
// volume filters see them (VolumeBinding, VolumeZone), resolved from the API objects.
//
// TargetPod::FromJson keeps only the claim names (spec.volumes[].persistentVolumeClaim
// .claimName, each once, in order). Whoever explains the pod reads each claim's PVC, then
// its StorageClass or PV when ResolveClaim needs them (ResolveClaims sequences the reads),
// and ResolveClaim turns the objects into a ClaimResolution:
//
//   PVC                                                 state                 nodes it keeps out
//   missing                                             kMissing              every node (1)
//   status.phase Lost                                   kLost                 every node (1)
//   metadata.deletionTimestamp set                      kDeleting             every node (1)
//   spec.volumeName set and annotation
//     pv.kubernetes.io/bind-completed (bound), its PV:
//       missing                                         kVolumeMissing        every node (2)
//       present, its spec.claimRef not this claim       kVolumeNotClaimed     none: not checked (4)
//       present                                         kBound                see below
//   else, no spec.volumeName and its StorageClass
//     exists with volumeBindingMode WaitForFirstConsumer kWaitForFirstConsumer none: not checked
//   else (Immediate class, no class, class missing,
//     or pre-bound: volumeName without bind-completed)  kNotBound             every node (3)
//
//   (1) VolumeBinding PreFilter (podHasPVCs), in that order; UnschedulableAndUnresolvable.
//   (2) VolumeBinding Filter (checkBoundClaims): "pvc(s) bound to non-existent pv(s)".
//   (3) VolumeBinding PreFilter: "pod has unbound immediate PersistentVolumeClaims"
//       (GetPodVolumeClaims: an unbound claim with a volumeName counts as immediate;
//       IsDelayBindingMode: no class or a missing class is Immediate).
//   (4) Not the scheduler's rule (checkBoundClaims reads the named PV whoever it belongs to)
//       but the PV controller's (IsVolumeBoundToClaim: claimRef namespace and name equal,
//       and the uid when the claimRef has one): a tenant can write any volumeName and the
//       bind-completed annotation on a claim of its own, and what the explainer says lands in
//       the VMIM's conditions, which the VM's owner reads. So a PV is described only to the
//       claim it is bound to; any other claim learns only that it exists (as the scheduler
//       refuses a claim whose PV is missing, that much is visible anyway).
//
// A bound claim keeps two things of its PV:
//   - spec.nodeAffinity.required (VolumeBinding checkBoundClaims → component-helpers
//     CheckNodeAffinity): matched against the node's *labels only*; the node is built
//     without a name, so valid matchFields requirements are skipped (nodeaffinity's
//     nodeSelectorTerm.match) and a term whose requirements do not parse matches nothing.
//     The API server keeps it immutable once set (but for the beta→GA label key rename).
//   - its zone/region labels (VolumeZone): the keys failure-domain.beta.kubernetes.io/zone,
//     failure-domain.beta.kubernetes.io/region, topology.kubernetes.io/zone,
//     topology.kubernetes.io/region, each value a "__"-separated set (parts trimmed; a value
//     with an empty part is ignored, as cloud-provider's LabelZonesToSet error is). Labels
//     can be edited.
//
// Not modelled (the claim reads as checked only as above): WaitForFirstConsumer claims
// (the scheduler then judges StorageClass allowedTopologies, matching unbound PVs and CSI
// storage capacity), generic ephemeral volumes (their PVC is named after the pod), in-tree
// PVs the scheduler translates to CSI (translation may rewrite the node affinity), and the
// VolumeRestrictions / NodeVolumeLimits filters. Nothing here throws: odd JSON reads as
// absent fields.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_selector.h"

namespace kmt::api {

enum class ClaimState : uint8_t {
  kNotLookedUp,           // not resolved (yet): not checked
  kMissing,               // no such PVC
  kLost,                  // PVC status.phase Lost
  kDeleting,              // PVC being deleted
  kNotBound,              // not bound and not WaitForFirstConsumer
  kWaitForFirstConsumer,  // not bound, binding waits for the pod: not checked
  kBound,                 // bound; its PV was read
  kVolumeMissing,         // bound to a PV that does not exist
  kVolumeNotClaimed,      // names a PV that exists but is not bound to it: not described
};

// The PV topology label keys VolumeZone reads, legacy beta first (its order).
inline constexpr std::string_view kLabelZoneBeta = "failure-domain.beta.kubernetes.io/zone";
inline constexpr std::string_view kLabelRegionBeta = "failure-domain.beta.kubernetes.io/region";
inline constexpr std::string_view kLabelZone = "topology.kubernetes.io/zone";
inline constexpr std::string_view kLabelRegion = "topology.kubernetes.io/region";
inline constexpr std::string_view kTopologyLabels[] = {kLabelZoneBeta, kLabelRegionBeta, kLabelZone,
                                                       kLabelRegion};
// The GA key a node is also looked up by for a PV's beta key (VolumeZone translateToGALabel).
std::string_view GaTopologyKey(std::string_view key);

// One topology label of a PV: the node's value for `key` must be one of `values`.
struct ZoneLabel {
  std::string key;
  std::vector<std::string> values;  // sorted, unique, non-empty
  bool operator==(const ZoneLabel&) const = default;
};

struct ClaimResolution {
  ClaimState state = ClaimState::kNotLookedUp;
  std::string volume;                         // the PVC's spec.volumeName ("" when none)
  std::optional<NodeSelector> node_affinity;  // kBound: the PV's spec.nodeAffinity.required
  std::vector<ZoneLabel> zones;               // kBound: the PV's topology labels
  bool operator==(const ClaimResolution&) const = default;
};

struct PodClaim {
  std::string name;  // spec.volumes[].persistentVolumeClaim.claimName
  ClaimResolution resolution;
  bool operator==(const PodClaim&) const = default;
};

// The pod's claims, unresolved: each claimName once, in spec.volumes order.
std::vector<PodClaim> PodClaimsFromJson(const nlohmann::json& pod);
// The members of the pod PodClaimsFromJson reads (paths of member names, an array's elements
// each: base::ObjectReads).
std::vector<std::vector<std::string>> PodClaimsReads();

// What ResolveClaim needs besides the PVC (empty: nothing): the StorageClass of a claim
// with no spec.volumeName (the beta annotation volume.beta.kubernetes.io/storage-class
// first, then spec.storageClassName), and the PV of a bound claim.
std::string StorageClassToRead(const nlohmann::json& pvc);
std::string VolumeToRead(const nlohmann::json& pvc);

// The resolution from the objects read; nullptr for one that does not exist (or was not
// needed). `pvc` == nullptr: kMissing.
ClaimResolution ResolveClaim(const nlohmann::json* pvc, const nlohmann::json* storage_class,
                             const nlohmann::json* pv);

// Reads the objects a claim's resolution needs, through `read` (the object, or nullopt when
// it does not exist), and resolves each claim. An empty claim name is kMissing without a
// read. Exceptions from `read` propagate; claims not reached stay kNotLookedUp.
enum class VolumeObject : uint8_t { kClaim, kStorageClass, kVolume };
using VolumeReader =
    std::function<std::optional<nlohmann::json>(VolumeObject, const std::string& name)>;
void ResolveClaims(std::vector<PodClaim>& claims, const VolumeReader& read);

}  // namespace kmt::api
