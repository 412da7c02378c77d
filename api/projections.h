// api/projections.h — compact views of Node, target Pod and VMIM objects that keep only
// what the operator uses. Caches hold tens of thousands of these, so label-like strings
// are interned (api/labels.h: counted references, so a text goes with the last object
// holding it) and nothing else of the object is kept. FromJson never throws: a missing or
// oddly typed field leaves its default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/compact_string.h"
#include "api/labels.h"
#include "api/node_selector.h"
#include "api/pod_volumes.h"
#include "base/json_filter.h"

namespace kmt::api {

// Resource amounts: cpu in milli-cores, memory in bytes, pods as a count, and every other
// resource (devices.kubevirt.io/kvm, hugepages-1Gi, ephemeral-storage, …) as whole units
// keyed by interned name.
struct Resources {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int64_t pods = 0;
  std::vector<std::pair<InternedString, int64_t>> scalar;  // sorted by text address

  // The amount of a scalar resource (0 when absent); `name` interned or nullptr.
  int64_t Scalar(const std::string* name) const;
  int64_t Scalar(const InternedString& name) const { return Scalar(name.get()); }
  void AddScalar(const InternedString& name, int64_t amount);
  // Adds a core/v1 ResourceList JSON ({"cpu": "100m", ...}); unparsable amounts skipped.
  void AddList(const nlohmann::json& list);
  // Element-wise maximum (init containers: the pod needs the larger of the two).
  void MaxWith(const Resources& o);
  void Add(const Resources& o);
  bool operator==(const Resources&) const = default;
};

enum class TaintEffect : uint8_t { kNoSchedule, kPreferNoSchedule, kNoExecute, kOther };
std::string_view ToString(TaintEffect e);
TaintEffect ParseTaintEffect(std::string_view s);

struct Taint {
  InternedString key;
  InternedString value;  // "" when absent
  TaintEffect effect = TaintEffect::kOther;
  bool operator==(const Taint&) const = default;
};

enum class ConditionStatus : uint8_t { kUnknown, kTrue, kFalse };
ConditionStatus ParseConditionStatus(std::string_view s);  // "True"/"False"/other

struct NodeInfo {
  std::string name;
  Labels labels;
  bool unschedulable = false;                         // spec.unschedulable (cordoned)
  std::vector<Taint> taints;                          // spec.taints
  ConditionStatus ready = ConditionStatus::kUnknown;  // status.conditions[type=Ready]
  Resources allocatable;                              // status.allocatable

  static NodeInfo FromJson(const nlohmann::json& node);
  // The members of a node FromJson reads: the informer builds nothing else of a node.
  static const base::ObjectReads& Reads();
  bool operator==(const NodeInfo&) const = default;
};

// Interned texts (tolerations repeat across every pod); none reads as "".
struct Toleration {
  InternedString key;  // "" with Exists: every key
  InternedString op;   // "Exists" or "Equal" ("" means Equal)
  InternedString value;
  InternedString effect;  // "" matches every effect

  static Toleration Make(std::string_view key, std::string_view op, std::string_view value,
                         std::string_view effect);
  const std::string& Key() const;
  const std::string& Op() const;
  const std::string& Value() const;
  const std::string& Effect() const;
  bool operator==(const Toleration& o) const {
    return Key() == o.Key() && Op() == o.Op() && Value() == o.Value() && Effect() == o.Effect();
  }
};

// A metav1.LabelSelector (matchExpressions use In/NotIn/Exists/DoesNotExist).
struct LabelSelector {
  Labels match_labels;
  std::vector<NodeSelectorRequirement> match_expressions;
  bool operator==(const LabelSelector&) const = default;
};

// One requiredDuringSchedulingIgnoredDuringExecution pod (anti-)affinity term. Whose pods it
// selects (framework.AffinityTerm.Matches): a pod in one of `namespaces` or in a namespace
// `namespace_selector` selects, whose labels `selector` matches. Both namespace fields empty
// (namespaces empty, namespaceSelector null): the namespace of the pod holding the term.
struct PodAffinityTerm {
  LabelSelector selector;
  CompactString topology_key;
  std::vector<std::string> namespaces;
  // namespaceSelector: nullopt when null (selects no namespace); an empty selector ({})
  // selects every namespace.
  std::optional<LabelSelector> namespace_selector = std::nullopt;
  bool selector_null = false;  // labelSelector null (or not an object): selects no pod
  bool operator==(const PodAffinityTerm&) const = default;
};

// One spec.topologySpreadConstraints entry (PodTopologySpread), defaults applied.
struct TopologySpreadConstraint {
  int32_t max_skew = 0;
  std::string topology_key;
  bool do_not_schedule = false;  // whenUnsatisfiable DoNotSchedule (ScheduleAnyway: scoring)
  LabelSelector selector;
  bool selector_null = false;                 // labelSelector null: selects no pod
  std::vector<std::string> match_label_keys;  // ANDed from the pod's own labels
  int32_t min_domains = 1;                    // minDomains (null: 1)
  bool honor_node_affinity = true;            // nodeAffinityPolicy (null: Honor)
  bool honor_node_taints = false;             // nodeTaintsPolicy (null: Ignore)
  bool operator==(const TopologySpreadConstraint&) const = default;
};

// A namespace: what pod (anti-)affinity namespaceSelectors match.
struct NamespaceInfo {
  std::string name;
  Labels labels;

  static NamespaceInfo FromJson(const nlohmann::json& ns);
};

// A pod or migration phase that is never left: Succeeded or Failed.
bool IsTerminalPhase(std::string_view phase);

// What a target pod asks of its node and of its neighbours, beyond its own labels and pod
// anti-affinity: the same on every target pod of one VM template, so FromJson hash-conses it
// (MakeShared below): ten thousand gated pods of a few templates hold a few of these. The
// pool holds weak references only; a shape goes with the last pod holding it.
struct TargetPodShape {
  std::vector<Toleration> tolerations;
  Labels node_selector;                                   // spec.nodeSelector
  std::optional<NodeSelector> required_affinity;          // nodeAffinity.required…
  std::vector<PodAffinityTerm> pod_affinity;              // podAffinity.required…
  std::vector<TopologySpreadConstraint> topology_spread;  // spec.topologySpreadConstraints
  Resources requests;  // max(sum of containers, each init container) + overhead; pods = 1
  // While the pod has the gate, what the AND patch needs beyond uid and resourceVersion, so
  // that it is computed without another read: the part of spec.affinity it reads
  // (api::AffinityTheAndReads), compactly serialised, empty when the pod has no affinity; and
  // spec.schedulingGates the same way when it is anything but our gate alone (the common
  // case, kept as nothing). Both empty once the gate is gone.
  std::string patch_basis;
  std::string patch_gates;

  // The one shape of this content that is alive, `shape` itself when none is. `key` names
  // the content (equal keys: equal shapes); thread-safe.
  static std::shared_ptr<const TargetPodShape> MakeShared(std::string key, TargetPodShape shape);
  // The shape with nothing in it, shared by every default-constructed TargetPod.
  static const std::shared_ptr<const TargetPodShape>& Empty();
  // Distinct pooled shapes alive now (for tests and the memory tooling).
  static size_t PoolSize();
  bool operator==(const TargetPodShape&) const = default;
};

// Texts are CompactStrings (8 bytes each, short ones inline): ten thousand gated pods may wait.
struct TargetPod {
  CompactString ns, name, uid, resource_version;
  CompactString migration_job_name;  // annotation kubevirt.io/migrationJobName
  CompactString created;             // metadata.creationTimestamp (RFC 3339, UTC, seconds)
  CompactString node_name;           // spec.nodeName ("" while unscheduled)
  CompactString phase;               // status.phase
  bool has_gate = false;             // spec.schedulingGates has api::kSchedulingGate
  // status.conditions[type=PodScheduled]
  ConditionStatus scheduled = ConditionStatus::kUnknown;
  CompactString scheduled_reason, scheduled_message;
  // Per pod: KubeVirt's term names the pod's own VMI uid.
  std::vector<PodAffinityTerm> anti_affinity;  // podAntiAffinity.required…
  Labels labels;                               // metadata.labels
  // spec.volumes[].persistentVolumeClaim, names only: the caller resolves them from the API
  // (api/pod_volumes.h) before explaining; unresolved ones are not checked. Per pod: a VM's
  // disks are its own.
  std::vector<PodClaim> claims;

  // Label kubevirt.io/migrationJobUID and label kubevirt.io/created-by (the VMI uid), "" when
  // absent: read from `labels`, not kept twice.
  std::string_view migration_job_uid() const;
  std::string_view created_by() const;

  // The shared part (TargetPodShape), read-only.
  const TargetPodShape& shape() const { return *shape_.p; }
  const std::vector<Toleration>& tolerations() const { return shape_.p->tolerations; }
  const Labels& node_selector() const { return shape_.p->node_selector; }
  const std::optional<NodeSelector>& required_affinity() const {
    return shape_.p->required_affinity;
  }
  const std::vector<PodAffinityTerm>& pod_affinity() const { return shape_.p->pod_affinity; }
  const std::vector<TopologySpreadConstraint>& topology_spread() const {
    return shape_.p->topology_spread;
  }
  const Resources& requests() const { return shape_.p->requests; }
  const std::string& patch_basis() const { return shape_.p->patch_basis; }
  const std::string& patch_gates() const { return shape_.p->patch_gates; }
  // This pod's own copy of the shape, to change (a shared one is copied first; the copy is
  // never pooled).
  TargetPodShape& mutable_shape();
  // Whether this pod's shape is the pooled one (shared with equal pods).
  bool shape_pooled() const;

  static TargetPod FromJson(const nlohmann::json& pod);
  // The members of a pod FromJson reads (and the informer's index, MigrationJobIndexValues,
  // a label): the informer builds nothing else of a target pod.
  static const base::ObjectReads& Reads();
  // The basis as JSON, for AndTermIntoPod (null when the pod is not gated): {"metadata": {uid,
  // resourceVersion}, "spec": {affinity, schedulingGates}}, each member only when the pod
  // had it.
  nlohmann::json PatchBasis() const;
  bool operator==(const TargetPod&) const = default;

 private:
  // Compared by content: equal pods are equal whether or not they share one shape.
  struct SharedShape {
    std::shared_ptr<const TargetPodShape> p = TargetPodShape::Empty();
    bool operator==(const SharedShape& o) const { return p == o.p || *p == *o.p; }
  };
  SharedShape shape_;
};

// A pod already bound to a node: what the explainer needs from it.
struct BoundPod {
  std::string node_name, ns, name;
  Labels labels;
  Resources requests;
  // podAntiAffinity.required… (empty for most pods: no allocation then).
  std::vector<PodAffinityTerm> anti_affinity;
  bool terminal = false;  // Succeeded or Failed: the scheduler no longer counts it
  bool deleting = false;  // metadata.deletionTimestamp set: topology spread skips it
  // Labels the cache left out (kBoundPodLabelBytes): selectors naming a key this pod lacks
  // cannot tell whether it has it. Kept labels are the first ones by key.
  uint32_t labels_dropped = 0;

  static BoundPod FromJson(const nlohmann::json& pod);
  // The members of a pod FromJson reads: the informer builds nothing else of a bound pod.
  static const base::ObjectReads& Reads();
  bool operator==(const BoundPod&) const = default;
};

struct MigrationCondition {
  CompactString type, status, reason, message, last_probe_time, last_transition_time;
  bool operator==(const MigrationCondition&) const = default;
};

// Texts are CompactStrings (8 bytes each, short ones inline), as TargetPod's.
struct MigrationInfo {
  CompactString ns, name, uid, resource_version;
  CompactString vmi_name;                              // spec.vmiName
  CompactString phase;                                 // status.phase
  std::optional<CompactString> added_term_text;        // AddedTermSource()
  Labels added_node_selector;                          // spec.addedNodeSelector
  std::vector<MigrationCondition> conditions;          // status.conditions
  CompactString target_node, source_node, target_pod;  // status.migrationState
  bool evacuation = false;  // annotation kubevirt.io/evacuationMigration present
  CompactString policy;     // annotation migration-target.kubevirt.io/policy ("" when none)
  CompactString created;    // metadata.creationTimestamp (RFC 3339), when a policy is named
  // The policy's spec.maxInboundPerNode (annotation migration-target.kubevirt.io/
  // max-inbound-per-node, read by api::ParseMaxInbound), only when a policy is named.
  std::optional<int64_t> max_inbound;

  static MigrationInfo FromJson(const nlohmann::json& vmim);
  // The members of a VMIM FromJson reads: the informer builds nothing else of a VMIM.
  static const base::ObjectReads& Reads();
  // Succeeded or Failed: KubeVirt never moves a VMIM out of these.
  bool Final() const;
  bool operator==(const MigrationInfo&) const = default;
};

// Sum of spec.containers[].resources.requests, raised to any larger init container,
// plus spec.overhead; pods = 1.
Resources PodRequests(const nlohmann::json& pod);
// The members of the pod PodRequests reads.
std::vector<base::ObjectReads::Path> PodRequestsReads();

}  // namespace kmt::api
