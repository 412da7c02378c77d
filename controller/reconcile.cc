// controller/reconcile.cc
#include "controller/reconcile.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "api/added_term.h"
#include "api/explain.h"
#include "api/names.h"
#include "api/node_match.h"
#include "api/term_and.h"

namespace kmt::controller {

namespace {

// Every condition type, status, reason and Event type comes from api/names.h.
using api::kStatusFalse;
using api::kStatusTrue;
constexpr std::string_view kApplied = api::kConditionTermApplied;
constexpr std::string_view kUnschedulableType = api::kConditionTargetPodUnschedulable;
using api::kReasonInboundLimitReached;
using api::kReasonInvalidAddedTerm;
using api::kReasonPermanentlyUnschedulable;
using api::kReasonScheduled;
using api::kReasonTargetPodEscapedGate;
using api::kReasonTermApplied;
using api::kReasonUnschedulable;
constexpr std::string_view kEventUnschedulable = api::kEventTargetPodUnschedulable;
constexpr std::string_view kEventScheduled = api::kEventTargetPodScheduled;
constexpr std::string_view kNormal = api::kEventTypeNormal;
constexpr std::string_view kWarning = api::kEventTypeWarning;

std::string PodRef(const api::TargetPod& p) { return p.ns + "/" + p.name; }

// What happened to the added term on one target pod.
enum class TermState { kNone, kApplied, kEscaped, kWaiting };

struct TermOutcome {
  TermState state = TermState::kNone;
  DesiredCondition condition;
  std::string event_message;  // the Event text when the condition transitions
};

DesiredCondition AppliedCondition(const api::TargetPod& pod, const std::string& term_text) {
  return {kApplied, kStatusTrue, kReasonTermApplied,
          fmt::format("Target pod {} requires the added term {}", PodRef(pod), term_text)};
}

std::string ReleasedMessage(const api::TargetPod& pod, const std::string& term_text,
                            const std::string& excluded) {
  return fmt::format(
      "Released scheduling gate of target pod {} with the added term {} ANDed into its required "
      "node affinity{}",
      PodRef(pod), term_text, excluded);
}

std::string CarriesMessage(const api::TargetPod& pod, const std::string& term_text) {
  return fmt::format("Target pod {} carries the added term {}", PodRef(pod), term_text);
}

DesiredCondition ScheduledCondition(const std::string& pod_ref, const std::string& node) {
  return {kUnschedulableType, kStatusFalse, kReasonScheduled,
          fmt::format("Target pod {} was scheduled to node {}", pod_ref, node)};
}

DesiredCondition InvalidTermCondition(const api::AddedTermParse& parsed) {
  std::string causes;
  for (const auto& c : parsed.causes) causes += (causes.empty() ? "" : "; ") + api::ToString(c);
  return {kApplied, kStatusFalse, kReasonInvalidAddedTerm, "The added term is invalid: " + causes};
}

bool IsScheduledReport(const api::MigrationCondition* c) {
  return c != nullptr && c->status == kStatusFalse && c->reason == kReasonScheduled;
}

const api::NodeInfo* FindNode(std::span<const api::NodeInfo> nodes, const std::string& name) {
  for (const auto& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

bool UnderInboundLimit(const Observed& in) {
  return in.vmim.max_inbound.has_value() && !in.vmim.policy.empty();
}

// Where a gated pod may go under its policy's limit: the nodes it fits with the term,
// split by the policy's inbound count (see reconcile.h).
struct InboundJudgement {
  std::vector<std::string> free;       // below the limit
  std::vector<std::string> full;       // at it
  std::vector<std::string> full_text;  // "node n/cap (pods)" of each full node, for the message
};

bool MayLandOn(const Inbound& i, const api::NodeInfo& node) {
  if (!i.node.empty()) return i.node == node.name;
  if (i.released_to) {
    return std::find(i.released_to->begin(), i.released_to->end(), node.name) !=
           i.released_to->end();
  }
  return !i.required_affinity ||
         api::SelectorMatchesNode(*i.required_affinity, node.labels, node.name);
}

InboundJudgement JudgeInbound(const api::TargetPod& pod, const api::NodeSelectorTerm& term,
                              const Observed& in) {
  InboundJudgement j;
  const int64_t cap = *in.vmim.max_inbound;
  // The nodes the pod could go to with the term, but for the limit: the explainer's verdict
  // (the term, its own affinity and node selector, taints, cordon, readiness, resources; not
  // the node it leaves). A node no pod of the VM can use is neither free nor full.
  const api::Explainer explainer(pod, &term, in.source_node, in.nodes, in.bound_pods,
                                 in.namespaces);
  for (size_t i = 0; i < in.nodes.size(); ++i) {
    if (explainer.Evaluate(i) != 0) continue;
    const api::NodeInfo& node = in.nodes[i];
    // The message lands in the VMIM's conditions, which the VM's owner reads: pods of other
    // namespaces are counted there, not named.
    std::vector<std::string> holders;
    size_t elsewhere = 0;
    const std::string own_prefix = pod.ns + "/";
    for (const Inbound& other : in.inbound) {
      if (!MayLandOn(other, node)) continue;
      if (other.pod.starts_with(own_prefix)) {
        holders.push_back(other.pod);
      } else {
        ++elsewhere;
      }
    }
    const size_t count = holders.size() + elsewhere;
    if (std::cmp_less(count, cap)) {
      j.free.push_back(node.name);
      continue;
    }
    j.full.push_back(node.name);
    std::ranges::sort(holders);
    std::string who = api::ListFirst(holders, 3);
    if (elsewhere > 0) {
      who += fmt::format("{}{} in other namespaces", holders.empty() ? "" : ", ", elsewhere);
    }
    j.full_text.push_back(fmt::format("{} {}/{} ({})", node.name, count, cap, who));
  }
  std::ranges::sort(j.free);
  return j;
}

// The added term on one target pod: patch, delete, or report.
TermOutcome PlanTerm(const api::TargetPod& pod, const api::NodeSelectorTerm& term,
                     const Observed& in, Plan& plan) {
  const std::string term_text = api::ToString(term);
  TermOutcome out;
  if (pod.has_gate) {
    api::NodeSelectorTerm released = term;
    std::string excluded;
    if (UnderInboundLimit(in)) {
      InboundJudgement j = JudgeInbound(pod, term, in);
      const int64_t cap = *in.vmim.max_inbound;
      if (!j.free.empty() || !j.full.empty()) {  // no node allowed: released, reported
        if (j.free.empty()) {
          out.state = TermState::kWaiting;
          out.condition = {
              kApplied, kStatusFalse, kReasonInboundLimitReached,
              fmt::format("MigrationTargetPolicy \"{}\" allows {} inbound migration{} per node "
                          "(maxInboundPerNode), and every node target pod {} may go to has "
                          "that many: {}; the scheduling gate stays until one frees up",
                          in.vmim.policy, cap, cap == 1 ? "" : "s", PodRef(pod),
                          api::ListFirst(j.full_text, 10))};
          out.event_message = out.condition.message;
          plan.waits_for_inbound = true;
          plan.requeue_after = kInboundRefresh;
          return out;
        }
        for (const std::string& n : j.full) {
          released.match_fields.push_back({"metadata.name", "NotIn", {n}});
        }
        if (!j.full.empty()) {
          excluded = fmt::format(
              "; nodes at MigrationTargetPolicy \"{}\"'s limit of {} inbound per node are "
              "excluded: {}",
              in.vmim.policy, cap, api::ListFirst(j.full, 10));
        }
        plan.reservation = Reservation{PodRef(pod), pod.uid, j.free};
      }
    }
    std::vector<nlohmann::json> ops =
        api::AndTermIntoPod(pod.PatchBasis(), released, api::kSchedulingGate);
    if (ops.empty()) {  // a shape no valid pod has: leave it to the scheduler's gate
      plan.reservation.reset();
      return out;
    }
    plan.pod_patches.push_back({pod.ns, pod.name, pod.uid, std::move(ops)});
    out.state = TermState::kApplied;
    out.condition = AppliedCondition(pod, term_text);
    out.event_message = ReleasedMessage(pod, term_text, excluded);
    return out;
  }
  if (pod.required_affinity() && api::SelectorCarriesTerm(*pod.required_affinity(), term)) {
    out.state = TermState::kApplied;
    out.condition = AppliedCondition(pod, term_text);
    // Released by this replica in a pass that put its report off: the same Event as then.
    out.event_message = in.released_here.contains(pod.uid) ? ReleasedMessage(pod, term_text, "")
                                                           : CarriesMessage(pod, term_text);
    return out;
  }
  // Escaped the gate: the webhook did not see it (bypassed or down with a
  // failurePolicy that was changed to Ignore).
  out.state = TermState::kEscaped;
  const std::string prefix = fmt::format(
      "Target pod {} was created without the scheduling gate and does not carry the added term {}",
      PodRef(pod), term_text);
  std::string verdict;
  bool remove = true;
  if (pod.node_name.empty()) {
    verdict = "deleted it while unscheduled";
  } else if (const api::NodeInfo* node = FindNode(in.nodes, pod.node_name); node == nullptr) {
    verdict = fmt::format("deleted it: node {} is unknown", pod.node_name);
  } else if (!api::TermMatchesNode(term, node->labels, node->name)) {
    verdict = fmt::format("deleted it: node {} is outside the term", pod.node_name);
  } else {
    verdict = fmt::format("left it alone: node {} is inside the term", pod.node_name);
    remove = false;
  }
  if (remove) plan.pod_deletions.push_back({pod.ns, pod.name, pod.uid, verdict});
  out.condition = {kApplied, kStatusFalse, kReasonTargetPodEscapedGate, prefix + "; " + verdict};
  out.event_message = out.condition.message;
  return out;
}

void Apply(Plan& plan, const DesiredCondition& want, std::string_view event_type,
           std::string_view event_reason, const std::string& event_message, base::WallTime now) {
  ConditionChange change = SetCondition(plan.conditions, want, now);
  if (change == ConditionChange::kNone) return;
  plan.conditions_changed = true;
  if (change == ConditionChange::kTransitioned) {
    plan.events.push_back({std::string(event_type), std::string(event_reason), event_message});
  }
}

bool Deleted(const Plan& plan, const api::TargetPod& pod) {
  return std::ranges::any_of(plan.pod_deletions,
                             [&](const PodDeletion& d) { return d.uid == pod.uid; });
}

// The target pods of the VMIM, by name (a stable choice when there are several).
std::vector<const api::TargetPod*> OwnPods(const Observed& in) {
  std::vector<const api::TargetPod*> pods;
  for (const auto& p : in.target_pods) {
    if (p.migration_job_uid() == in.vmim.uid) pods.push_back(&p);
  }
  std::ranges::sort(
      pods, [](const api::TargetPod* a, const api::TargetPod* b) { return a->name < b->name; });
  return pods;
}

// A final VMIM without a report whose target pod never carried the term: its gate was
// removed around the operator (admission policy bypassed) or it was created without one
// (webhook bypassed), and no replica reconciled before the migration ended. The target pod
// is the one KubeVirt recorded when the cache has it, else any of the migration's pods that is
// neither gated nor carries the term; `node` is where the VMI went ("" when it did not move).
// A gated pod, or no pod at all, establishes nothing: nullopt.
struct EscapedAfterTheFact {
  const api::TargetPod* pod = nullptr;
  std::string node;
};

std::optional<EscapedAfterTheFact> FindEscapedAfterTheFact(
    const Observed& in, const std::vector<const api::TargetPod*>& pods,
    const api::NodeSelectorTerm& term) {
  const api::MigrationInfo& vmim = in.vmim;
  auto escaped = [&](const api::TargetPod* p) {
    return !p->has_gate &&
           !(p->required_affinity() && api::SelectorCarriesTerm(*p->required_affinity(), term));
  };
  const api::TargetPod* pod = nullptr;
  for (const api::TargetPod* p : pods) {
    if (!vmim.target_pod.empty() && p->name == vmim.target_pod) {
      pod = escaped(p) ? p : nullptr;
      break;
    }
    if (pod == nullptr && escaped(p)) pod = p;
  }
  if (pod == nullptr) return std::nullopt;
  // Where the VMI went: KubeVirt's record, else the escaped pod's node once it was handed over
  // (a Succeeded migration ran on its target pod).
  std::string node = vmim.target_node;
  if (node.empty() && vmim.phase == api::kPhaseSucceeded) node = pod->node_name;
  return EscapedAfterTheFact{pod, std::move(node)};
}

// The first target pod that took the term (released, carrying it), or nullptr.
const api::TargetPod* FirstCarrying(const std::vector<const api::TargetPod*>& pods,
                                    const api::NodeSelectorTerm& term) {
  for (const api::TargetPod* p : pods) {
    if (!p->has_gate && p->required_affinity() &&
        api::SelectorCarriesTerm(*p->required_affinity(), term)) {
      return p;
    }
  }
  return nullptr;
}

// Said as TargetPodEscapedGate with the node the VMI moved to and whether the term allows it
// (judged on in.nodes: NeedsNodes asks for them).
void PlanEscapedAfterTheFact(const Observed& in, const std::vector<const api::TargetPod*>& pods,
                             const api::NodeSelectorTerm& term, Plan& plan, base::WallTime now) {
  const api::MigrationInfo& vmim = in.vmim;
  std::optional<EscapedAfterTheFact> escaped = FindEscapedAfterTheFact(in, pods, term);
  if (!escaped) return;
  const std::string& node = escaped->node;
  std::string landing;
  if (node.empty()) {
    landing = fmt::format("the migration ended {} without moving the VMI to it", vmim.phase);
  } else {
    const api::NodeInfo* n = FindNode(in.nodes, node);
    const std::string judged = n == nullptr ? "which the operator does not know"
                               : api::TermMatchesNode(term, n->labels, n->name)
                                   ? "which is inside the term"
                                   : "which is outside the term";
    landing = fmt::format("the migration ended on node {}, {} ({})", node, judged, vmim.phase);
  }
  const std::string message = fmt::format(
      "Target pod {} never carried the added term {}: its scheduling gate was removed, or it "
      "was created without it, while no operator replica reconciled; {}",
      PodRef(*escaped->pod), api::ToString(term), landing);
  Apply(plan, {kApplied, kStatusFalse, kReasonTargetPodEscapedGate, message}, kWarning,
        kReasonTargetPodEscapedGate, message, now);
}

// The report a final VMIM is owed (see LacksFinalReport): only what the cache
// establishes is written; pods are never touched.
void PlanFinalReport(const Observed& in, Plan& plan, base::WallTime now) {
  const api::MigrationInfo& vmim = in.vmim;
  const std::vector<const api::TargetPod*> pods = OwnPods(in);
  api::AddedTermParse parsed = api::ParseAddedTerm(*vmim.added_term_text);
  if (!parsed.term) {
    DesiredCondition want = InvalidTermCondition(parsed);
    if (FindCondition(plan.conditions, kApplied) == nullptr) {
      Apply(plan, want, kWarning, kReasonInvalidAddedTerm, want.message, now);
    }
    return;  // the gate was never released: nothing was scheduled
  }
  if (FindCondition(plan.conditions, kApplied) == nullptr) {
    if (const api::TargetPod* p = FirstCarrying(pods, *parsed.term)) {
      const std::string term_text = api::ToString(*parsed.term);
      Apply(plan, AppliedCondition(*p, term_text), kNormal, kReasonTermApplied,
            CarriesMessage(*p, term_text), now);
    } else {
      PlanEscapedAfterTheFact(in, pods, *parsed.term, plan, now);
    }
  }
  // Scheduling is reported only for a pod that took the term: without Applied
  // the outcome is unknown here (pod still gated in the cache, escaped or
  // gone), and an escaped pod's binding is not the migration's.
  const api::MigrationCondition* applied = FindCondition(plan.conditions, kApplied);
  if (applied == nullptr || applied->status != kStatusTrue) return;
  if (IsScheduledReport(FindCondition(plan.conditions, kUnschedulableType))) return;
  // Where the target pod was bound: the pod itself while the cache has it,
  // else what KubeVirt recorded in the VMIM when the migration ended.
  std::string pod_ref, node;
  for (const api::TargetPod* p : pods) {
    if (p->node_name.empty() || p->has_gate || !p->required_affinity() ||
        !api::SelectorCarriesTerm(*p->required_affinity(), *parsed.term)) {
      continue;
    }
    pod_ref = PodRef(*p);
    node = p->node_name;
    break;
  }
  if (node.empty() && !vmim.target_node.empty() && !vmim.target_pod.empty()) {
    pod_ref = vmim.ns + "/" + vmim.target_pod;
    node = vmim.target_node;
  }
  if (node.empty()) return;
  DesiredCondition scheduled = ScheduledCondition(pod_ref, node);
  Apply(plan, scheduled, kNormal, kEventScheduled, scheduled.message, now);
}

// A target pod no node the term allows can ever take (`why`): said as permanent, and with
// --fail-fast-unschedulable the pod is deleted, which KubeVirt answers by failing the
// migration ("target pod was removed"), as it does when its own unschedulable timeout ends.
void PlanNeverFits(const api::TargetPod& pod, const std::string& why, const Observed& in,
                   Plan& plan, base::WallTime now) {
  std::string message = fmt::format(
      "Target pod {} can never be scheduled while this migration lasts: {}; ", PodRef(pod), why);
  if (in.fail_fast_unschedulable) {
    message += "deleted it so that KubeVirt fails the migration now (--fail-fast-unschedulable)";
    plan.pod_deletions.push_back({pod.ns, pod.name, pod.uid, "it can never be scheduled: " + why});
  } else {
    message +=
        "KubeVirt fails the migration when its unschedulable timeout passes (the operator's "
        "--fail-fast-unschedulable ends it at once)";
    plan.requeue_after = kUnschedulableRefresh;
  }
  DesiredCondition want{kUnschedulableType, kStatusTrue, kReasonPermanentlyUnschedulable, message};
  Apply(plan, want, kWarning, kReasonPermanentlyUnschedulable, message, now);
}

}  // namespace

const api::TargetPod* InboundPodOf(const api::MigrationInfo& vmim,
                                   std::span<const api::TargetPod* const> pods) {
  const api::TargetPod* newest = nullptr;
  for (const api::TargetPod* p : pods) {
    if (p == nullptr || p->ns != vmim.ns || p->migration_job_uid() != vmim.uid) continue;
    if (!vmim.target_pod.empty() && p->name == vmim.target_pod) return p;
    if (newest == nullptr || p->created > newest->created ||
        (p->created == newest->created && p->name > newest->name)) {
      newest = p;
    }
  }
  return newest;
}

bool LacksFinalReport(const api::MigrationInfo& vmim) {
  if (!vmim.Final() || !vmim.added_term_text) return false;
  const api::MigrationCondition* applied = FindCondition(vmim.conditions, kApplied);
  if (applied == nullptr) return true;
  if (applied->status != kStatusTrue)
    return false;  // escaped or invalid: nothing was scheduled for it
  if (IsScheduledReport(FindCondition(vmim.conditions, kUnschedulableType))) return false;
  // The gate held the pod until the term was in, so a Succeeded migration's
  // pod was bound; a Failed one's only if KubeVirt handed the VMI over to it.
  return vmim.phase == api::kPhaseSucceeded || !vmim.target_node.empty();
}

bool NeedsNodes(const Observed& in) {
  const api::MigrationInfo& vmim = in.vmim;
  if (!vmim.added_term_text && (vmim.Final() || vmim.added_node_selector.empty())) return false;
  std::optional<api::NodeSelectorTerm> term;
  if (vmim.added_term_text) {
    api::AddedTermParse parsed = api::ParseAddedTerm(*vmim.added_term_text);
    if (!parsed.term) return false;  // reported invalid, judged on no node
    term = std::move(parsed.term);
  }
  const std::vector<const api::TargetPod*> pods = OwnPods(in);
  if (vmim.Final()) {
    // PlanFinalReport: where an escaped pod's VMI went, when no pod took the term.
    if (FindCondition(vmim.conditions, kApplied) != nullptr || FirstCarrying(pods, *term)) {
      return false;
    }
    std::optional<EscapedAfterTheFact> escaped = FindEscapedAfterTheFact(in, pods, *term);
    return escaped && !escaped->node.empty();
  }
  for (const api::TargetPod* p : pods) {
    if (term && p->has_gate && UnderInboundLimit(in)) return true;
    const bool unschedulable = !p->has_gate && WaitsUnschedulable(*p);
    const bool escaped_bound =
        term && !p->has_gate && !p->node_name.empty() &&
        !(p->required_affinity() && api::SelectorCarriesTerm(*p->required_affinity(), *term));
    if (unschedulable || escaped_bound) return true;
  }
  return false;
}

Plan Reconcile(const Observed& in, base::WallTime now) {
  // Nodes are needed to judge where an escaped pod landed, to explain an unschedulable one
  // and to count a policy's inbound migrations.
  if (!in.nodes_loaded && NeedsNodes(in)) {
    Plan wait;
    wait.needs_nodes = true;
    return wait;
  }
  Plan plan;
  const api::MigrationInfo& vmim = in.vmim;
  plan.conditions = vmim.conditions;
  if (vmim.Final()) {
    // Not only when LacksFinalReport: a target pod's event may bring what the
    // VMIM alone does not show (a Failed migration's pod bound before handoff).
    if (vmim.added_term_text) PlanFinalReport(in, plan, now);
    return plan;
  }
  const bool has_term = vmim.added_term_text.has_value();
  if (!has_term && vmim.added_node_selector.empty()) return plan;

  const std::vector<const api::TargetPod*> pods = OwnPods(in);

  std::optional<api::NodeSelectorTerm> term;
  if (has_term) {
    api::AddedTermParse parsed = api::ParseAddedTerm(*vmim.added_term_text);
    if (!parsed.term) {
      for (const api::TargetPod* p : pods) {
        if (!p->has_gate && p->node_name.empty()) {
          plan.pod_deletions.push_back(
              {p->ns, p->name, p->uid, "the added term is invalid and the pod escaped the gate"});
        }
      }
      DesiredCondition want = InvalidTermCondition(parsed);
      Apply(plan, want, kWarning, kReasonInvalidAddedTerm, want.message, now);
      return plan;
    }
    term = std::move(parsed.term);
  }

  if (term) {
    // The escaped outcome of any pod wins over applied: it is the one to see.
    std::optional<TermOutcome> shown;
    for (const api::TargetPod* p : pods) {
      // Under a limit, one release per plan: the next pod counts it (the reservation).
      if (p->has_gate && (plan.reservation || plan.waits_for_inbound)) continue;
      TermOutcome o = PlanTerm(*p, *term, in, plan);
      if (o.state == TermState::kNone) continue;
      if (!shown || (o.state == TermState::kEscaped && shown->state != TermState::kEscaped)) {
        shown = std::move(o);
      }
    }
    if (shown) {
      const bool escaped = shown->state == TermState::kEscaped;
      Apply(plan, shown->condition, escaped ? kWarning : kNormal, shown->condition.reason,
            shown->event_message, now);
    }
  }

  // Scheduling report: the first unschedulable pod, else the first bound one.
  const api::TargetPod* unschedulable = nullptr;
  const api::TargetPod* bound = nullptr;
  for (const api::TargetPod* p : pods) {
    if (Deleted(plan, *p)) continue;
    if (!p->node_name.empty()) {
      if (!bound) bound = p;
    } else if (WaitsUnschedulable(*p) && !p->has_gate) {
      if (!unschedulable) unschedulable = p;
    }
  }
  if (unschedulable) {
    api::TargetPod own = *unschedulable;
    if (term)
      own.mutable_shape().required_affinity = api::WithoutTerm(own.required_affinity(), *term);
    api::Explainer explainer(own, term ? &*term : nullptr, in.source_node, in.nodes, in.bound_pods,
                             in.namespaces);
    if (std::optional<std::string> never = explainer.WhyNeverFits()) {
      PlanNeverFits(*unschedulable, *never, in, plan, now);
      return plan;
    }
    std::string summary = explainer.Summarize();  // renders only the nodes it shows
    std::string message = fmt::format("Target pod {} is unschedulable: {} Per node{}: {}",
                                      PodRef(*unschedulable), unschedulable->scheduled_message,
                                      term ? " the added term allows" : "", summary);
    DesiredCondition want{kUnschedulableType, kStatusTrue, kReasonUnschedulable, message};
    Apply(plan, want, kWarning, kEventUnschedulable, message, now);
    plan.requeue_after = kUnschedulableRefresh;
  } else if (bound) {
    DesiredCondition want = ScheduledCondition(PodRef(*bound), bound->node_name);
    Apply(plan, want, kNormal, kEventScheduled, want.message, now);
  }
  return plan;
}

}  // namespace kmt::controller
