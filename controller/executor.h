// controller/executor.h — applies a reconcile Plan through the KubeClient.
//
// Order and rules (KubeVirt's controllers: act, then write status; PATCH what
// we do not own, guarded by `test`):
//   1. Pod patches (JSON Patch with the plan's leading `test` ops). A 409, or
//      the API server's 422 for a failed `test` op (kube/error.h maps both to
//      kConflict), or a pod that vanished (404), means the plan was computed
//      from a stale pod: stop and re-plan (kReplan). Nothing else of the plan
//      is applied then.
//   2. Pod deletions with a uid precondition (a replacement pod of the same
//      name is never deleted by mistake). 404 is success; a precondition
//      conflict means re-plan. When the plan also changes the conditions, the
//      VMIM is read first and its uid and conditions must be the plan's basis
//      (else re-plan, nothing deleted): KubeVirt fails the VMIM as soon as the
//      pod is gone, and the conditions saying why must still be writable then.
//   3. Status, only when the conditions changed: the VMIM is read fresh; if its
//      conditions differ from those the plan was computed from, re-plan.
//      Otherwise a JSON Patch on the /status subresource: `test` that
//      status.conditions is still exactly what was read, then `add` of the
//      whole list (it is atomic in KubeVirt's CRD). KubeVirt rewrites the
//      VMIM's status often (phase, migrationState) while a migration starts;
//      guarding only the conditions keeps those writes from conflicting with
//      ours. Without a conditions list yet, metadata.resourceVersion of the
//      fresh read is tested instead (JSON Patch cannot test for absence).
//      A failed test op re-reads and retries (up to 5 times) while the
//      conditions are unchanged; then re-plan. 404 → the VMIM is gone: done.
//   4. Events, only after the writes they describe succeeded.
// Every failed call is settled by kube::DispositionOf (kube/error.h): retry → kRetry
// (with the server's Retry-After), re-read or relist → kReplan, terminal → kTerminal;
// absent as said above per step.
// Never writes the VM or VMI, never the VMIM's spec, metadata (descheduler
// annotations) or status.evacuationNodeName: only status.conditions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "api/projections.h"
#include "base/log.h"
#include "controller/events.h"
#include "controller/reconcile.h"
#include "kube/client.h"

namespace kmt::controller {

enum class ExecOutcome {
  kDone,      // everything applied
  kReplan,    // stale view (conflict): re-read and re-plan now
  kRetry,     // transient failure: retry with backoff
  kTerminal,  // the API refused the request itself: retrying cannot help
};

struct ExecResult {
  ExecOutcome outcome = ExecOutcome::kDone;
  std::string error;  // for kReplan/kRetry/kTerminal
  // kRetry: the server asked not to retry before this (429/5xx Retry-After).
  std::optional<std::chrono::seconds> retry_after;
  std::vector<std::string> released_pods;  // uids of pods whose gate was released
};

class Executor {
 public:
  Executor(kube::KubeClient& client, EventRecorder& events, base::Logger& log);

  // Every line logged carries `log`'s fields (the controller's: the key and the reconcile
  // id); without one, the VMIM's "ns/name" as vmim.
  ExecResult Apply(const api::MigrationInfo& vmim, const Plan& plan);
  ExecResult Apply(const api::MigrationInfo& vmim, const Plan& plan, const base::LogContext& log);

  // The status patch writing `plan`'s conditions onto `current`, the VMIM as
  // just read (public for tests).
  static nlohmann::json StatusPatch(const nlohmann::json& current, const Plan& plan);

  // Why applying a plan stopped before its end (kDone: nothing is left to do, e.g. the VMIM
  // is gone). Public for the file's helpers.
  struct Halt {
    ExecOutcome outcome = ExecOutcome::kDone;
    std::string error;
    std::optional<std::chrono::seconds> retry_after;
  };

 private:
  // The steps of Apply, in order (see the banner); each returns why it stopped the plan,
  // or nullopt to go on.
  // 1. Pod patches; the uid of each pod whose gate was released is added to `released`.
  std::optional<Halt> ReleaseGates(const Plan& plan, const base::LogContext& log,
                                   std::vector<std::string>& released);
  // 2a. Before deleting a pod of a plan that also writes conditions: the VMIM is still the
  //     plan's basis.
  std::optional<Halt> CheckDeletionBasis(const api::MigrationInfo& vmim, const Plan& plan,
                                         const base::LogContext& log);
  // 2b. Pod deletions (uid precondition).
  std::optional<Halt> DeleteTargetPods(const Plan& plan, const base::LogContext& log);
  // 3. The status write, guarded and retried.
  std::optional<Halt> WriteConditions(const api::MigrationInfo& vmim, const Plan& plan,
                                      const base::LogContext& log);
  // 4. The plan's Events, once its writes succeeded; the recorder's lines about them carry
  //    `log`'s fields.
  void RecordEvents(const api::MigrationInfo& vmim, const Plan& plan, const base::LogContext& log);

  kube::KubeClient& client_;
  EventRecorder& events_;
  base::Logger& log_;
};

}  // namespace kmt::controller
