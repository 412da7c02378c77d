// controller/reconcile.h — the pure heart of the operator:
//
//     Plan plan = Reconcile(observed, now);
//
// No I/O and no clock reads: everything comes in through Observed (read from
// the informer caches) and `now`. The executor (controller/executor.h) applies
// the plan. Level-based and idempotent: planning again on the state the plan
// produced yields an empty plan.
//
// Behaviour (issue 5, DESIGN.md §3):
//   - VMIM in a final phase (Succeeded, Failed), or without any target
//     constraint (no added term, no spec.addedNodeSelector): empty plan.
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
//   - A VMIM that reached a final phase before our report landed (KubeVirt
//     wrote status in between, or the operator crashed between the pod patch
//     and the status write) gets that report once, if a target pod carries the
//     term: Applied=True and, when bound, Scheduled. Pods are never touched
//     then (see LacksFinalReport).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "api/projections.h"
#include "controller/clock.h"
#include "controller/conditions.h"

namespace kmt::controller {

// Condition reasons and Event reasons of this operator.
inline constexpr const char* kReasonTermApplied = "TermApplied";
inline constexpr const char* kReasonTargetPodEscapedGate = "TargetPodEscapedGate";
inline constexpr const char* kReasonInvalidAddedTerm = "InvalidAddedTerm";
inline constexpr const char* kReasonUnschedulable = "Unschedulable";

// Not bound, and the scheduler said PodScheduled=False, Unschedulable: the pod waits for a
// node to change (a gated pod says SchedulingGated instead).
inline bool WaitsUnschedulable(const api::TargetPod& p) {
  return p.node_name.empty() && p.scheduled == api::ConditionStatus::kFalse &&
         p.scheduled_reason == kReasonUnschedulable;
}
inline constexpr const char* kReasonScheduled = "Scheduled";

// How often an unschedulable target pod's explanation is refreshed (node
// changes also trigger it through the node handler).
inline constexpr std::chrono::seconds kUnschedulableRefresh{30};

// A final VMIM with an added term but without our Applied condition: the one
// kind of final VMIM still worth a reconcile (report only).
bool LacksFinalReport(const api::MigrationInfo& vmim);

struct Observed {
  api::MigrationInfo vmim;
  // Target pods: label kubevirt.io/migrationJobUID == vmim.uid.
  std::vector<api::TargetPod> target_pods;
  // Every node, and the pods bound to nodes (for the explainer's resource
  // accounting and the VM's anti-affinity). Only read when a target pod is
  // unschedulable or bound without the term; may be empty otherwise.
  std::span<const api::NodeInfo> nodes;
  std::span<const api::BoundPod> bound_pods;
  // False when nodes and bound_pods were not filled in (they are large); a
  // plan that needs them then says so (Plan::needs_nodes) and does nothing else.
  bool nodes_loaded = true;
  // The node the VMI runs on now (VMIM status.migrationState.sourceNode, or the
  // node of the VMI's running virt-launcher pod). "" when unknown.
  std::string source_node;
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
  std::optional<Duration> requeue_after;
  // Observed::nodes_loaded was false and this VMIM needs them: fill them in
  // and plan again. Nothing else is set.
  bool needs_nodes = false;

  bool Empty() const {
    return pod_patches.empty() && pod_deletions.empty() && !conditions_changed && events.empty() &&
           !requeue_after;
  }
};

Plan Reconcile(const Observed& observed, WallTime now);

}  // namespace kmt::controller
