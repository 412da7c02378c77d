// controller/reconcile.h — the pure heart of the operator:
//
//     Plan plan = Reconcile(observed, now);
//
// No I/O and no clock reads: everything comes in through Observed (read from
// the informer caches) and `now`. The executor (controller/executor.h) applies
// the plan. Level-based and idempotent: planning again on the state the plan
// produced yields an empty plan.
//
// Behaviour (DESIGN.md §3):
//   - VMIM without any target constraint (no added term, no
//     spec.addedNodeSelector), or in a final phase (Succeeded, Failed) without
//     an added term: empty plan. A final one with a term: the final report
//     (below) and nothing else.
//   - Added term, target pod gated → one guarded JSON Patch that ANDs the term
//     into the pod's required node affinity and removes our gate;
//     addedNodeSelectorTermApplied=True reason TermApplied; a Normal Event.
//   - Target pod not gated and already carrying the term → Applied=True.
//   - Target pod not gated and not carrying the term (the webhook was
//     bypassed): deleted (uid precondition) while unscheduled or bound to a
//     node outside the term (or a node we do not know); Applied=False reason
//     TargetPodEscapedGate; a Warning Event. Bound inside the term: left alone,
//     still reported as escaped.
//   - An added term that does not parse or validate (annotation written
//     around the webhook): Applied=False reason InvalidAddedTerm with every
//     cause; the gate is never released; ungated unscheduled pods are deleted.
//   - Target pod PodScheduled=False reason Unschedulable →
//     targetPodUnschedulable=True reason Unschedulable: the scheduler's message
//     plus the per-node explanation (api/explain.h); requeued to refresh it.
//     Once bound: targetPodUnschedulable=False reason Scheduled naming the
//     node. This reporting also covers VMIMs with only spec.addedNodeSelector.
//   - Events only on transitions (a new condition, or a new status or reason).
//   - The final report: a VMIM with an added term that reached a final phase
//     still gets the report it is owed, whatever happened before (KubeVirt
//     completed it between our pod patch and our status write, the pod was
//     bound and the migration done before we saw the binding, the operator
//     crashed or was down): Applied (True when a target pod carries the term,
//     False/InvalidAddedTerm for an invalid term) and then, when Applied is
//     True, targetPodUnschedulable=False/Scheduled naming the node the pod
//     carrying the term was bound to: from the pod while the cache has it
//     bound, else from the VMIM's status.migrationState (targetNode,
//     targetPod), which KubeVirt fills in from the VMI's when the migration
//     ends. Pods are never touched then. A pod that is still gated, escaped
//     or gone leaves Applied unwritten rather than guessed (the cache may not
//     show our release yet). See LacksFinalReport.
//   - A policy's limit (VMIM annotations policy + max-inbound-per-node, api/policy.h): a
//     gated target pod is released only towards nodes below the limit. The nodes it may go
//     to are those the explainer says fit with the term (the pod's own affinity and node
//     selector, taints, cordon, readiness, resources; never the source); a node's count is
//     the policy's other non-final migrations' released target pods bound to it, plus those
//     not bound yet that may still land on it (their required affinity, or for a release
//     the cache does not show yet, the nodes it was released to: Observed::inbound). Nodes
//     at the limit are excluded by `metadata.name NotIn [node]` matchFields ANDed in with
//     the term (so the scheduler cannot pick them), and Plan::reservation names the nodes
//     left. When every such node is at the limit the gate stays: Applied=False reason
//     InboundLimitReached naming each node's count, Plan::waits_for_inbound (the shell
//     plans again when the policy's migrations or target pods change) and a refresh after
//     kInboundRefresh (for node changes). A pod no node allows is released as without a
//     limit: the unschedulable report says why.
//   - Each condition transition records its Event at most once: the
//     condition is what remembers it (a later plan, in this process or
//     another replica, sees the condition and records nothing). The executor
//     records Events only after the status write, and Events are best effort
//     (controller/events.h): a replica killed between the two loses that one.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "api/names.h"
#include "api/projections.h"
#include "base/clock.h"
#include "controller/conditions.h"

namespace kmt::controller {

// Not bound, and the scheduler said PodScheduled=False, Unschedulable: the pod waits for a
// node to change (a gated pod says SchedulingGated instead).
inline bool WaitsUnschedulable(const api::TargetPod& p) {
  return p.node_name.empty() && p.scheduled == api::ConditionStatus::kFalse &&
         p.scheduled_reason == api::kPodReasonUnschedulable;
}

// How often an unschedulable target pod's explanation is refreshed (node
// changes also trigger it through the node handler).
inline constexpr std::chrono::seconds kUnschedulableRefresh{30};
// How often a target pod held by a policy's limit is planned again without an event (the
// policy's migrations and target pods wake it at once; this covers node changes).
inline constexpr std::chrono::seconds kInboundRefresh{30};

// Whether a final VMIM with an added term may still be owed part of its final
// report, judged from the VMIM alone (the informer's filter: only such final
// VMIMs are reconciled on their own updates; target pod events always are):
//   - no addedNodeSelectorTermApplied condition yet; or
//   - Applied=True but no targetPodUnschedulable=False/Scheduled yet, and the
//     target pod was bound: always when Succeeded, when Failed once KubeVirt
//     recorded status.migrationState.targetNode.
// Reconcile then writes what it can establish; the rest waits for the next
// update (the pod's binding or KubeVirt's migrationState reaching the cache).
bool LacksFinalReport(const api::MigrationInfo& vmim);

// A released target pod of another non-final migration under the same policy.
struct Inbound {
  std::string pod;   // "ns/name", for the message
  std::string node;  // spec.nodeName; "" while unbound
  // Unbound: where it may still land. Its required node affinity as the cache has it, or,
  // while the cache does not show the release yet, the nodes it was released to.
  std::optional<api::NodeSelector> required_affinity;
  std::optional<std::vector<std::string>> released_to;
};

// The one target pod of `vmim` that counts against its policy's maxInboundPerNode: the pod
// KubeVirt recorded in status.migrationState.targetPod when it is among `pods`, else the
// newest (creationTimestamp, then the greater name). Anyone who may create pods in the VMIM's
// namespace can create more with its kubevirt.io/migrationJobUID label; counted one per
// migration, they cannot fill a node. Pods of another migration or namespace are ignored;
// nullptr when none is left.
const api::TargetPod* InboundPodOf(const api::MigrationInfo& vmim,
                                   std::span<const api::TargetPod* const> pods);

// A release under a policy's limit: the nodes the pod may go to (the shell counts them
// against the policy until the cache shows the pod released).
struct Reservation {
  std::string pod, pod_uid;
  std::vector<std::string> nodes;
};

struct Observed {
  api::MigrationInfo vmim;
  // Target pods: label kubevirt.io/migrationJobUID == vmim.uid.
  std::vector<api::TargetPod> target_pods;
  // Every node, and the pods bound to nodes (for the explainer's resource
  // accounting and the VM's anti-affinity). Only read when a target pod is
  // unschedulable or bound without the term; may be empty otherwise.
  std::span<const api::NodeInfo> nodes;
  std::span<const api::BoundPod> bound_pods;
  // Every namespace, loaded with the nodes only when some pod (anti-)affinity term of a
  // target pod or bound pod has a namespaceSelector (api::WantsNamespaces); else empty.
  std::span<const api::NamespaceInfo> namespaces;
  // False when nodes and bound_pods were not filled in (they are large, and read only when
  // NeedsNodes says so); a plan that needs them then says so (Plan::needs_nodes) and does
  // nothing else.
  bool nodes_loaded = true;
  // The node the VMI runs on now (VMIM status.migrationState.sourceNode, or the
  // node of the VMI's running virt-launcher pod). "" when unknown.
  std::string source_node;
  // Under a policy's limit (vmim.max_inbound): what the policy has inbound now, loaded with
  // the nodes (nodes_loaded).
  std::vector<Inbound> inbound;
  // --fail-fast-unschedulable: a target pod no node the term allows can ever take is
  // deleted, so KubeVirt fails the migration now instead of after its unschedulable
  // timeout (it deletes the pod then too).
  bool fail_fast_unschedulable = false;
  // Target pods (uids) whose gate this replica released in a pass that put the conditions
  // and Events off (a burst): their Event still says the gate was released here.
  std::set<std::string> released_here;
};

struct PodPatch {
  std::string ns, name, uid;
  std::vector<nlohmann::json> ops;  // RFC 6902, leading `test` ops
};

struct PodDeletion {
  std::string ns, name, uid;  // uid: delete precondition
  std::string why;            // for the log
};

struct EventSpec {
  std::string type;  // "Normal" or "Warning"
  std::string reason;
  std::string message;
  bool operator==(const EventSpec&) const = default;
};

struct Plan {
  std::vector<PodPatch> pod_patches;
  std::vector<PodDeletion> pod_deletions;
  // The VMIM's whole desired conditions list (others' conditions kept), and
  // whether it differs from what was observed (only then is it written).
  std::vector<api::MigrationCondition> conditions;
  bool conditions_changed = false;
  std::vector<EventSpec> events;
  std::optional<base::Duration> requeue_after;
  // Observed::nodes_loaded was false and this VMIM needs them (NeedsNodes): nothing else is
  // set. The shell asks NeedsNodes before planning, so it never sees this.
  bool needs_nodes = false;
  // Under a policy's limit: a release to reserve once the patch is applied, or the gate
  // held because every node is at the limit (plan again when the policy's migrations move).
  std::optional<Reservation> reservation;
  bool waits_for_inbound = false;

  bool Empty() const {
    return pod_patches.empty() && pod_deletions.empty() && !conditions_changed && events.empty() &&
           !requeue_after;
  }
};

// Whether planning `observed` needs the nodes, the bound pods and the namespaces (the
// explainer's inputs, large: the shell reads them only then), judged from the VMIM and its
// target pods alone: a target pod that escaped the gate and was bound (inside the term or
// not?), one waiting unschedulable (why?), a gated one under a policy's limit (which nodes
// are full?), or a final VMIM owed TargetPodEscapedGate whose VMI moved (to a node inside
// the term?).
bool NeedsNodes(const Observed& observed);

Plan Reconcile(const Observed& observed, base::WallTime now);

}  // namespace kmt::controller
