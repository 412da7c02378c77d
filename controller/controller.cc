// controller/controller.cc
#include "controller/controller.h"

#include <algorithm>
#include <exception>

#include "api/explain.h"
#include "api/names.h"
#include "controller/reconcile.h"
#include "kube/error.h"

namespace kmt::controller {

namespace {
// How soon a plan that waits for the bound-pod cache (a new leader's) tries again.
constexpr base::Duration kBoundPodsPoll = std::chrono::milliseconds(500);
// How long a key whose gates were released while other keys waited may put off its conditions
// and Events (see ApplyPlan): its target pod's next event brings it back once no release
// waits, and this at the latest; by then the caches have seen the release, so its next plan
// is the status write alone. Long enough for a burst of a few hundred releases to go out
// first (at 1 s, the status writes of a burst of 200 came due while pods were still being
// created and cut the release rate to a third: issue 41), short enough for `kubectl get`.
constexpr base::Duration kStatusDeferral = std::chrono::seconds(5);
}  // namespace

std::string KeyOf(const std::string& ns, const std::string& name) { return ns + "/" + name; }

bool SplitKey(const std::string& key, std::string* ns, std::string* name) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == key.size() ||
      key.find('/', slash + 1) != std::string::npos) {
    return false;
  }
  *ns = key.substr(0, slash);
  *name = key.substr(slash + 1);
  return true;
}

Controller::Controller(CacheView& view, kube::KubeClient& client, base::Clock& clock,
                       base::Logger& log, OperatorMetrics& metrics, EventRecorder& events,
                       ControllerOptions options)
    : view_(view),
      clock_(clock),
      log_(log),
      metrics_(metrics),
      executor_(client, events, log),
      options_(options),
      queue_(clock, options.rate_limits, &metrics.queue(), options.burst_quiet) {}

Controller::~Controller() { Stop(); }

void Controller::Enqueue(const std::string& key) { queue_.Add(key); }

void Controller::OnMigration(const api::MigrationInfo& vmim) { Enqueue(KeyOf(vmim.ns, vmim.name)); }

void Controller::OnTargetPod(const api::TargetPod& pod) {
  if (pod.migration_job_name.empty()) return;  // not a migration target pod
  const std::string key = KeyOf(pod.ns, pod.migration_job_name);
  bool owed = false;
  if (!pod.has_gate) {
    std::scoped_lock lock(status_owed_mu_);
    owed = status_owed_.contains(key);
  }
  // The event of a pod released while other keys waited (or of its binding) is for the
  // conditions and Events alone: it waits for the keys ahead, kStatusDeferral at most.
  if (owed) {
    queue_.AddYielding(key, kStatusDeferral);
  } else {
    Enqueue(key);
  }
  // A binding or a finished pod of a policy's migration may free a node for its waiters.
  bool waiting;
  {
    std::scoped_lock lock(waiters_mu_);
    waiting = !waiters_.empty();
  }
  if (!waiting) return;
  if (std::optional<api::MigrationInfo> vmim = view_.Migration(pod.ns, pod.migration_job_name)) {
    if (!vmim->policy.empty()) Wake(vmim->policy);
  }
}

void Controller::OnPolicyMigration(const std::string& policy) { Wake(policy); }

void Controller::Wake(const std::string& policy) {
  std::set<std::string> keys;
  {
    std::scoped_lock lock(waiters_mu_);
    auto it = waiters_.find(policy);
    if (it == waiters_.end()) return;
    keys = std::move(it->second);
    waiters_.erase(it);
  }
  for (const std::string& key : keys) Enqueue(key);
}

std::vector<Inbound> Controller::LoadInbound(const std::string& policy,
                                             const std::string& except_uid) {
  std::vector<Inbound> out;
  std::set<std::string> still_gated;
  for (const api::TargetPod& p : view_.PolicyTargetPods(policy, except_uid)) {
    if (api::IsTerminalPhase(p.phase)) continue;
    const std::string ref = p.ns + "/" + p.name;
    if (!p.has_gate) {
      out.push_back({ref, p.node_name, p.required_affinity(), std::nullopt});
      continue;
    }
    auto r = reserved_.find(p.uid);
    if (r != reserved_.end() && r->second.policy == policy) {
      out.push_back({ref, "", std::nullopt, r->second.nodes});
      still_gated.insert(p.uid);
    }
  }
  // The cache shows the release (or the pod or its migration is gone): it counts from there.
  for (auto it = reserved_.begin(); it != reserved_.end();) {
    if (it->second.policy == policy && !still_gated.count(it->first)) {
      it = reserved_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void Controller::OnNodeChange(const std::vector<std::shared_ptr<const api::TargetPod>>& targets) {
  for (const auto& p : targets) {
    if (WaitsUnschedulable(*p)) OnTargetPod(*p);
  }
}

void Controller::Start() {
  if (started_.exchange(true)) return;
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Worker(); });
  log_.Info("Started workers",
            {{"controller", "vmim"}, {"count", std::to_string(options_.workers)}});
}

void Controller::Stop() {
  queue_.ShutDownWithDrain();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
}

void Controller::Worker() {
  while (auto key = queue_.Get()) RunOne(*key);
}

std::optional<ReconcileResult> Controller::ProcessNext() {
  auto key = queue_.TryGet();
  if (!key) return std::nullopt;
  return RunOne(*key);
}

ReconcileResult Controller::RunOne(const std::string& key) {
  const base::SteadyTime start = clock_.Now();
  // Every line of this reconcile names the key and the reconcile (controller-runtime's
  // reconcileID), so one key's lines can be told apart from its next reconcile's.
  const base::LogContext log(
      log_, {{"vmim", key}, {"reconcile_id", std::to_string(++last_reconcile_id_)}});
  const KeyOutcome outcome = ReconcileKey(key, log);
  Settle(key, outcome, log);
  metrics_.ObserveReconcile(outcome.result, clock_.Now() - start);
  queue_.Done(key);
  return outcome.result;
}

void Controller::Settle(const std::string& key, const KeyOutcome& outcome,
                        const base::LogContext& log) {
  if (outcome.terminal) {
    log.Error("Failed to reconcile, not retrying", {{"error", outcome.reason}});
    metrics_.TerminalError();
    queue_.Forget(key);
    return;
  }
  switch (outcome.result) {
    case ReconcileResult::kSuccess:
      queue_.Forget(key);
      break;
    case ReconcileResult::kRequeueAfter:
      queue_.Forget(key);
      queue_.AddAfter(key, *outcome.requeue_after);
      break;
    case ReconcileResult::kRequeue:
    case ReconcileResult::kError:
      if (outcome.result == ReconcileResult::kRequeue) {
        log.Debug("Re-planning after a conflict", {{"error", outcome.reason}});
      } else {
        log.Error("Failed to reconcile", {{"error", outcome.reason}});
      }
      if (outcome.not_before) {
        queue_.AddRateLimited(key, *outcome.not_before);
      } else {
        queue_.AddRateLimited(key);
      }
      break;
  }
}

Controller::KeyOutcome Controller::ReconcileKey(const std::string& key,
                                                const base::LogContext& log) {
  std::string ns, name;
  if (!SplitKey(key, &ns, &name)) return KeyOutcome::Terminal("malformed key, not namespace/name");
  try {
    Observation observation;
    if (!Observe(ns, name, observation)) {
      OweStatus(key, false);
      return KeyOutcome::Done();  // deleted: nothing to do
    }
    if (observation.waits_for_bound_pods) {
      log.Debug("Waiting for the bound-pod cache to sync");
      return KeyOutcome::After(kBoundPodsPoll);
    }
    const Plan plan = Reconcile(observation.observed, clock_.WallNow());
    return ApplyPlan(key, observation.observed, plan, log);
  } catch (const kube::KubeError& e) {
    // A failed API read: retry with backoff (and after the server's Retry-After). A read
    // has no plan to re-read or to give up on: whatever its disposition, try again.
    return KeyOutcome::Retry(e.what(), e.retry_after());
  } catch (const std::exception& e) {
    // An unexpected error: retry with backoff.
    return KeyOutcome::Retry(e.what());
  }
}

bool Controller::Observe(const std::string& ns, const std::string& name, Observation& into) {
  std::optional<api::MigrationInfo> vmim = view_.Migration(ns, name);
  if (!vmim) return false;
  const bool under_limit = vmim->max_inbound.has_value() && !vmim->policy.empty();
  if (under_limit) into.limited = std::unique_lock<std::mutex>(inbound_mu_);
  Observed& observed = into.observed;
  observed.target_pods = view_.TargetPods(ns, vmim->uid);
  observed.vmim = std::move(*vmim);
  observed.source_node = observed.vmim.source_node;
  observed.fail_fast_unschedulable = options_.fail_fast_unschedulable;
  observed.released_here = ReleasedHere(KeyOf(ns, name));
  // The explainer's inputs are large: read only when the plan needs them.
  observed.nodes_loaded = NeedsNodes(observed);
  if (!observed.nodes_loaded) return true;
  if (!view_.BoundPodsReady()) {
    into.waits_for_bound_pods = true;
    return true;
  }
  into.nodes = view_.Nodes();
  into.bound_pods = view_.BoundPods();
  if (std::ranges::any_of(observed.target_pods, [&](const api::TargetPod& p) {
        return api::WantsNamespaces(p, into.bound_pods);
      })) {
    into.namespaces = view_.Namespaces();
  }
  // The pods the explainer judges are those not bound yet; their volumes are read here.
  for (api::TargetPod& p : observed.target_pods) {
    if (p.node_name.empty() && !api::IsTerminalPhase(p.phase)) view_.ResolveClaims(p);
  }
  observed.source_node = SourceNode(observed.vmim, observed.target_pods, into.bound_pods);
  observed.nodes = into.nodes;
  observed.bound_pods = into.bound_pods;
  observed.namespaces = into.namespaces;
  if (under_limit) observed.inbound = LoadInbound(observed.vmim.policy, observed.vmim.uid);
  return true;
}

void Controller::OweStatus(const std::string& key, bool owed) {
  std::scoped_lock lock(status_owed_mu_);
  if (owed) {
    status_owed_.try_emplace(key);
  } else {
    status_owed_.erase(key);
  }
}

void Controller::NoteReleasedHere(const std::string& key, const std::vector<std::string>& uids) {
  std::scoped_lock lock(status_owed_mu_);
  auto it = status_owed_.find(key);
  if (it != status_owed_.end()) it->second.insert(uids.begin(), uids.end());
}

std::set<std::string> Controller::ReleasedHere(const std::string& key) {
  std::scoped_lock lock(status_owed_mu_);
  auto it = status_owed_.find(key);
  return it == status_owed_.end() ? std::set<std::string>{} : it->second;
}

Controller::KeyOutcome Controller::ApplyPlan(const std::string& key, const Observed& observed,
                                             const Plan& plan, const base::LogContext& log) {
  if (plan.Empty()) {
    OweStatus(key, false);
    return KeyOutcome::Done();
  }
  if (plan.waits_for_inbound) {
    std::scoped_lock lock(waiters_mu_);
    waiters_[observed.vmim.policy].insert(key);
  }
  // A burst of gated pods: the release is what a waiting migration needs now, the conditions
  // and Events report it. While other keys wait or keep arriving (ControllerOptions::
  // burst_quiet), the gates go first (one API call instead of three) and the key comes back
  // once the burst is over, kStatusDeferral at most; its next plan finds the gate released
  // and the conditions still to write (the same transition, the same Events).
  // Not under a policy's inbound limit, whose accounting reads those conditions, nor with a
  // deletion, which the executor orders against the conditions.
  const bool defer_status = !plan.pod_patches.empty() && plan.pod_deletions.empty() &&
                            !plan.reservation && !plan.waits_for_inbound &&
                            (plan.conditions_changed || !plan.events.empty()) && queue_.Busy(key);
  OweStatus(key, defer_status);
  Plan release_only;
  if (defer_status) {
    release_only.pod_patches = plan.pod_patches;
    log.Debug("Releasing now, conditions after the waiting keys",
              {{"waiting", std::to_string(queue_.LenAhead())}});
  }
  const Plan& applied = defer_status ? release_only : plan;
  const ExecResult done = executor_.Apply(observed.vmim, applied, log);
  if (defer_status) NoteReleasedHere(key, done.released_pods);
  if (plan.reservation && std::ranges::find(done.released_pods, plan.reservation->pod_uid) !=
                              done.released_pods.end()) {
    reserved_[plan.reservation->pod_uid] = {observed.vmim.policy, plan.reservation->nodes};
    log.Info("Released under the policy's inbound limit",
             {{"policy", observed.vmim.policy}, {"pod", plan.reservation->pod}});
  }
  for (const auto& uid : done.released_pods) {
    if (auto seen = view_.TargetPodSeenAt(uid)) metrics_.ObserveGateRelease(clock_.Now() - *seen);
  }
  switch (done.outcome) {
    case ExecOutcome::kDone:
      if (defer_status) {
        return KeyOutcome::After(plan.requeue_after ? std::min(*plan.requeue_after, kStatusDeferral)
                                                    : kStatusDeferral);
      }
      // An escape is counted once: its Event is planned only on the condition's transition.
      for (const auto& e : plan.events) {
        if (e.reason == api::kReasonTargetPodEscapedGate) metrics_.TargetPodEscapedGate();
      }
      return plan.requeue_after ? KeyOutcome::After(*plan.requeue_after) : KeyOutcome::Done();
    case ExecOutcome::kReplan:
      return KeyOutcome::Replan(done.error);
    case ExecOutcome::kRetry:
      return KeyOutcome::Retry(done.error, done.retry_after);
    case ExecOutcome::kTerminal:
      return KeyOutcome::Terminal(done.error);
  }
  return KeyOutcome::Retry("unknown executor outcome");  // every ExecOutcome returns above
}

}  // namespace kmt::controller
