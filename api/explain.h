// api/explain.h — why can't the target pod go to node X? A pure scheduling explainer.
//
// For every node it reports either "fits" or every reason the scheduler would keep the
// target pod off it: the admin's added term, cordon, readiness, untolerated
// NoSchedule/NoExecute taints, the VM's own nodeSelector and required node affinity, the
// VM already running there (source node, or KubeVirt's anti-affinity to the source
// virt-launcher pod) or its own pod anti-affinity, allocatable cpu/memory/pods/extended
// resources after the pods already bound there, other pods' required anti-affinity toward
// the pod, the VM's own required pod affinity, its DoNotSchedule topology spread
// constraints (api/pod_rules.h has the exact rules), and the VM's volumes: a claim the
// scheduler refuses outright (missing, not bound, being deleted, Lost, or bound to a
// missing PV: every node), a bound PV's required node affinity, and its zone/region labels
// (api/pod_volumes.h; only the claims the caller resolved in TargetPod::claims are
// checked). It mirrors the filters of kube-scheduler v1.34 (NodeUnschedulable,
// TaintToleration, NodeAffinity, NodeResourcesFit, InterPodAffinity, PodTopologySpread,
// VolumeBinding, VolumeZone), not its scoring.
//
// The pod as the scheduler sees it has the added term ANDed into its required node
// affinity: topology spread's nodeAffinityPolicy Honor counts only nodes the term allows.
//
// Cost: the constructor does the per-pod work once (interning keys, summing bound pods
// per node, the pod-affinity and topology domains); Evaluate() then allocates nothing, so
// a cluster of thousands of nodes is cheap to explain. Text is only rendered for the nodes
// reported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_selector.h"
#include "api/projections.h"

namespace kmt::api {

enum class ReasonKind : uint8_t {
  kExcludedByAddedTerm,
  kCordoned,
  kNotReady,
  kTaintNotTolerated,
  kNodeSelectorMismatch,     // the VM's own spec.nodeSelector
  kOwnAffinityExcludes,      // the VM's own required node affinity
  kAlreadyRunsThere,         // source node or anti-affinity to the source pod
  kInsufficientResource,     // cpu, memory, pods or an extended resource
  kExistingPodAntiAffinity,  // a bound pod's required anti-affinity selects the VM's pod
  kOwnPodAffinity,           // the VM's own required pod affinity has no pod there
  kTopologySpread,           // a DoNotSchedule topology spread constraint
  kVolumeClaim,              // a claim the scheduler refuses on every node (api/pod_volumes.h)
  kVolumeNodeAffinity,       // a bound PV's required node affinity
  kVolumeZone,               // a bound PV's zone/region labels
};
inline constexpr int kReasonKindCount = 14;

// Bit (1u << kind) per reason present; 0 means the node fits.
using ReasonMask = uint32_t;
constexpr ReasonMask Bit(ReasonKind k) { return 1u << static_cast<unsigned>(k); }

struct Reason {
  ReasonKind kind;
  std::string text;  // e.g. "taint dedicated=gpu:NoSchedule not tolerated"
  bool operator==(const Reason&) const = default;
};

struct NodeExplanation {
  std::string node;
  bool allowed_by_term = true;  // the added term (if any) matches this node
  std::vector<Reason> reasons;  // empty: fits
  bool fits() const { return reasons.empty(); }
};

// Whom an explanation is written for. The reconcile loop writes into the VMIM's conditions
// and Events, which the VM's owner (a tenant) reads: pods of other namespaces are counted
// there, never named. `kubectl migrate explain` runs with its user's own credentials, which
// had to list those pods to explain anything: it names them.
enum class Disclosure : uint8_t {
  kOwnNamespace,    // name the pod's own namespace's objects; count the others
  kEveryNamespace,  // name every object read
};

class Explainer {
 public:
  // `pod.required_affinity` must be the VM's own (without the added term).
  // `added_term` may be null. `pod`, `added_term` and `nodes` must outlive the Explainer
  // (it keeps pointers into them); `bound` and `namespaces` are only read here.
  // `namespaces` gives the labels namespaceSelectors match: pass every namespace when
  // WantsNamespaces(pod, bound); otherwise it may stay empty (no term reads it).
  Explainer(const TargetPod& pod, const NodeSelectorTerm* added_term, std::string_view source_node,
            std::span<const NodeInfo> nodes, std::span<const BoundPod> bound,
            std::span<const NamespaceInfo> namespaces = {},
            Disclosure disclosure = Disclosure::kOwnNamespace);

  size_t node_count() const { return nodes_.size(); }
  // Hot path: the reasons node `i` is out, as a mask. No allocation.
  ReasonMask Evaluate(size_t i) const;
  // Cold path: the full explanation of node `i`, with texts.
  NodeExplanation Explain(size_t i) const;
  // Every node, sorted by name.
  std::vector<NodeExplanation> ExplainAll() const;
  // One bounded message about the nodes the added term allows (all nodes without a term),
  // sorted by name: "node-a: cordoned; node-b: taint k=v:NoSchedule not tolerated,
  // insufficient memory (requested 2Gi, free 1Gi); ... and 7 more nodes". Fitting nodes are
  // listed as "node-c: fits". No allowed node: "no node matches the added term".
  // Evaluates every node but renders texts only for the first max_nodes allowed.
  std::string Summarize(size_t max_nodes = 10) const;
  // Why no node the added term allows can ever take the pod during this migration, or
  // nullopt when one might (or there is no added term). Permanent only: the term names
  // nodes by metadata.name and none of them exists, or every node it allows is the one
  // the VM runs on (or in its own hostname anti-affinity), or is excluded by the VM's own
  // required node affinity or by a bound PV's node affinity (immutable, and the VM's
  // volumes do not change during a migration). Cordons, taints, readiness, resources, the
  // nodeSelector (kubevirt.io/schedulable follows virt-handler), other pods' placement
  // (other pods' anti-affinity, the VM's pod affinity, topology spread), claims not (yet)
  // bound or found, and PV zone labels (editable) can change, so a node excluded only by
  // them keeps the answer nullopt.
  std::optional<std::string> WhyNeverFits(size_t max_nodes = 10) const;
  // "" or, when some bound pod's labels were cut by the cache (BoundPod::labels_dropped) and
  // one of the pod's selectors (its pod anti-affinity, pod affinity, or a DoNotSchedule
  // spread constraint) names a key that pod lacks, a note naming those pods (counting other
  // namespaces' pods unless Disclosure::kEveryNamespace): "labels truncated: vms/a carries
  // more labels than the operator caches (8 KiB a pod), ...". Summarize() ends with it.
  const std::string& LabelsNote() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
  std::span<const NodeInfo> nodes_;
};

// Some pod (anti-)affinity term of the pod, or a required anti-affinity term of a bound pod,
// has a non-null namespaceSelector: the Explainer then needs the namespaces' labels.
bool WantsNamespaces(const TargetPod& pod, std::span<const BoundPod> bound);

// The first `shown` of `items`, comma-separated, then " and N more" for the rest:
// "a, b and 3 more". For the bounded lists of node and pod names in messages.
std::string ListFirst(const std::vector<std::string>& items, size_t shown);

}  // namespace kmt::api
