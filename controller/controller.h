// controller/controller.h — the VMIM controller: queue, workers, reconcile,
// executor, and controller-runtime's result contract.
//
// A work item is a VMIM key "namespace/name", never an event. For each key a
// worker reads the view (CacheView), plans (Reconcile, pure), applies
// (Executor), and settles the key:
//   - done, nothing to refresh     → Forget (backoff reset)        result=success
//   - done, plan asks a refresh    → Forget + AddAfter(d)          result=requeue_after
//   - stale view (conflict)        → AddRateLimited (re-read soon) result=requeue
//   - transient error              → AddRateLimited                result=error
//     (a 429/5xx with Retry-After: AddRateLimited no earlier than it asked,
//     capped at the rate limiter's max_delay)
//   - terminal error (invalid, forbidden) → Forget, logged, counted in
//     controller_runtime_terminal_reconcile_errors_total          result=error
// The queue guarantees one key is never processed by two workers at once.
//
// Event handlers (called by the caches) map objects to keys: a VMIM to its
// own key, a target pod to "ns/<kubevirt.io/migrationJobName>", and a node
// change to every VMIM whose target pod is unschedulable (its explanation may
// have changed).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/projections.h"
#include "base/clock.h"
#include "base/log.h"
#include "controller/cache_view.h"
#include "controller/events.h"
#include "controller/executor.h"
#include "controller/operator_metrics.h"
#include "controller/reconcile.h"
#include "controller/work_queue.h"
#include "kube/client.h"

namespace kmt::controller {

struct ControllerOptions {
  int workers = 2;
  RateLimiterOptions rate_limits;
  bool fail_fast_unschedulable = false;  // Observed::fail_fast_unschedulable
  // How long after another key's add a burst counts as still arriving: a release then puts
  // off its conditions and Events, and those wait until no key has been added for this long
  // (kStatusDeferral at most). Zero: only keys waiting in the queue make a burst.
  base::Duration burst_quiet = std::chrono::milliseconds(200);
};

class Controller {
 public:
  Controller(CacheView& view, kube::KubeClient& client, base::Clock& clock, base::Logger& log,
             OperatorMetrics& metrics, EventRecorder& events, ControllerOptions options = {});
  ~Controller();  // Stop()

  // ---- event handlers (thread-safe) ----
  void OnMigration(const api::MigrationInfo& vmim);
  void OnTargetPod(const api::TargetPod& pod);
  // A node changed: re-explain every unschedulable target pod in `targets`.
  void OnNodeChange(const std::vector<std::shared_ptr<const api::TargetPod>>& targets);
  void Enqueue(const std::string& key);
  // A migration naming `policy` changed phase or went: plan again the migrations held by
  // that policy's maxInboundPerNode (a node may have freed up).
  void OnPolicyMigration(const std::string& policy);

  // Starts the workers (threads blocking on the queue).
  void Start();
  // Stops taking keys, waits for keys in progress, joins the workers.
  void Stop();

  // Processes one queued key on the calling thread, if any (tests). Returns
  // the result, or nullopt when nothing was queued.
  std::optional<ReconcileResult> ProcessNext();

  WorkQueue& queue() { return queue_; }

 private:
  // What one reconcile of a key came to, and so what the queue does with the key
  // (controller-runtime's reconcileHandler: one result, turned into queue work in one place).
  struct KeyOutcome {
    ReconcileResult result = ReconcileResult::kSuccess;
    std::optional<base::Duration> requeue_after;  // kRequeueAfter: when to look again
    std::optional<base::Duration> not_before;     // kRequeue/kError: the server's Retry-After
    bool terminal = false;                        // kError that retrying cannot fix: forgotten
    std::string reason;                           // kRequeue/kError: why (logged)

    static KeyOutcome Done() { return {}; }
    static KeyOutcome After(base::Duration d) {
      return {ReconcileResult::kRequeueAfter, d, {}, false, {}};
    }
    static KeyOutcome Replan(std::string reason) {
      return {ReconcileResult::kRequeue, {}, {}, false, std::move(reason)};
    }
    static KeyOutcome Retry(std::string reason,
                            std::optional<base::Duration> not_before = std::nullopt) {
      return {ReconcileResult::kError, {}, not_before, false, std::move(reason)};
    }
    static KeyOutcome Terminal(std::string reason) {
      return {ReconcileResult::kError, {}, {}, true, std::move(reason)};
    }
  };
  // Everything one plan is made from, read once (Observe). `observed`'s spans point into
  // the vectors here, so it is neither copied nor moved.
  struct Observation {
    Observation() = default;
    Observation(const Observation&) = delete;
    Observation& operator=(const Observation&) = delete;

    Observed observed;
    std::vector<api::NodeInfo> nodes;
    std::vector<api::BoundPod> bound_pods;
    std::vector<api::NamespaceInfo> namespaces;
    // The plan needs the explainer's inputs and the bound-pod cache has not synced yet
    // (CacheView::BoundPodsReady): nothing else was read; try again shortly.
    bool waits_for_bound_pods = false;
    // Held under a policy's limit (from before the inbound is read until the plan is
    // applied): such keys are planned and applied one at a time.
    std::unique_lock<std::mutex> limited;
  };

  // Reconciles the key: Observe, Reconcile (the plan), ApplyPlan. Touches the queue only
  // through the result; logs through `log` (the key and the reconcile id on every line).
  KeyOutcome ReconcileKey(const std::string& key, const base::LogContext& log);
  // The one read of every object the plan needs: the VMIM, its target pods and, when
  // NeedsNodes says the plan needs them, the nodes, the bound pods, the namespaces (when a
  // pod affinity term selects namespaces), the unbound target pods' volumes, the VMI's
  // node and the policy's inbound. False when the VMIM is gone.
  bool Observe(const std::string& ns, const std::string& name, Observation& into);
  // Applies the plan and says what comes of it: released reservations, gate-release and
  // escape metrics, and the executor's outcome as the key's.
  // Marks whether `key`'s conditions and Events were put off by its last pass (status_owed_).
  void OweStatus(const std::string& key, bool owed);
  // The target pods released in `key`'s deferring passes (Observed::released_here).
  void NoteReleasedHere(const std::string& key, const std::vector<std::string>& uids);
  std::set<std::string> ReleasedHere(const std::string& key);
  KeyOutcome ApplyPlan(const std::string& key, const Observed& observed, const Plan& plan,
                       const base::LogContext& log);
  // The one place a result becomes queue, metric and log work.
  void Settle(const std::string& key, const KeyOutcome& outcome, const base::LogContext& log);
  void Worker();
  // One key: reconcile, observe its duration, mark it done in the queue.
  ReconcileResult RunOne(const std::string& key);
  // What the policy has inbound besides the VMIM `except_uid`: the cache's released target
  // pods, and the releases of this process the cache does not show yet. Drops the
  // reservations the cache has caught up with. Called under inbound_mu_.
  std::vector<Inbound> LoadInbound(const std::string& policy, const std::string& except_uid);
  void Wake(const std::string& policy);

  CacheView& view_;
  base::Clock& clock_;
  base::Logger& log_;
  OperatorMetrics& metrics_;
  Executor executor_;
  ControllerOptions options_;
  WorkQueue queue_;
  std::vector<std::thread> workers_;
  std::atomic<bool> started_{false};
  std::atomic<uint64_t> last_reconcile_id_{0};  // reconcile_id of the last key begun

  // maxInboundPerNode: releases under a limit are planned and applied one at a time (the
  // count must see the release before), and each is reserved until the cache shows it.
  struct Reserved {
    std::string policy;
    std::vector<std::string> nodes;
  };
  std::mutex inbound_mu_;
  std::map<std::string, Reserved> reserved_;  // pod uid ->
  // Keys held by a policy's limit, by policy: woken by OnPolicyMigration and target pods.
  std::mutex waiters_mu_;
  std::map<std::string, std::set<std::string>> waiters_;
  // Keys whose gates were released with their conditions and Events put off (ApplyPlan):
  // their target pods' events, which now only report, yield to the keys that still wait
  // for a release. A key leaves the set at its next pass that does not put them off.
  std::mutex status_owed_mu_;
  // Key -> the target pods (uids) released in the passes that put its report off.
  std::map<std::string, std::set<std::string>> status_owed_;
};

// "ns/name" ↔ parts. SplitKey returns false on a key without exactly one '/'.
std::string KeyOf(const std::string& ns, const std::string& name);
bool SplitKey(const std::string& key, std::string* ns, std::string* name);

}  // namespace kmt::controller
