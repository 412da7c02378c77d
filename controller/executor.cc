// controller/executor.cc
#include "controller/executor.h"

#include <algorithm>

#include "base/json.h"
#include "base/json_patch.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::controller {

namespace {

// Reads and guarded patches of the VMIM status before giving up to a re-plan.
constexpr int kStatusAttempts = 5;

// A failed call, settled by kube::DispositionOf (kube/error.h). The only thing this
// says itself is what "absent" means for the call that failed: the pod a patch was
// planned for vanished (the plan is stale: re-plan), or the VMIM whose status we write
// is gone (nothing left to report: done). A 410 cannot be relisted from here: the plan
// came from the caches, so a stale view is re-planned like a conflict.
Executor::Halt Failed(const kube::KubeError& e, bool absent_is_replan) {
  Executor::Halt r;
  r.error = e.what();
  switch (kube::DispositionOf(e)) {
    case kube::Disposition::kRetry:
      r.outcome = ExecOutcome::kRetry;
      r.retry_after = e.retry_after();
      break;
    case kube::Disposition::kReread:
    case kube::Disposition::kRelist:
      r.outcome = ExecOutcome::kReplan;
      break;
    case kube::Disposition::kAbsent:
      r.outcome = absent_is_replan ? ExecOutcome::kReplan : ExecOutcome::kDone;
      break;
    case kube::Disposition::kTerminal:
      r.outcome = ExecOutcome::kTerminal;
      break;
  }
  return r;
}

// Every condition the plan set (those not already in the basis it was planned from)
// is stored as planned: a status PATCH whose answer was lost took effect.
bool StoresPlanned(const std::vector<api::MigrationCondition>& stored,
                   const std::vector<api::MigrationCondition>& basis,
                   const std::vector<api::MigrationCondition>& planned) {
  auto has = [](const std::vector<api::MigrationCondition>& in, const api::MigrationCondition& c) {
    return std::ranges::find(in, c) != in.end();
  };
  bool any = false;
  for (const api::MigrationCondition& c : planned) {
    if (has(basis, c)) continue;
    if (!has(stored, c)) return false;
    any = true;
  }
  return any;
}

// The connection broke with the request sent: it may have taken effect.
bool MayHaveTakenEffect(const kube::KubeError& e) {
  return e.kind() == kube::ErrorKind::kTransport || e.kind() == kube::ErrorKind::kTimeout;
}

// Why a plan computed from `planned` must be made again now that the VMIM reads as `fresh`
// (replaced, or its conditions changed: the plan's conditions were derived from the old
// ones), or nullopt while the plan still holds.
std::optional<std::string> StaleBasis(const api::MigrationInfo& fresh,
                                      const api::MigrationInfo& planned) {
  if (fresh.uid != planned.uid) return "the VMIM was replaced since it was read";
  if (fresh.conditions != planned.conditions) {
    return "the VMIM's conditions changed since they were read";
  }
  return std::nullopt;
}

}  // namespace

Executor::Executor(kube::KubeClient& client, EventRecorder& events, base::Logger& log)
    : client_(client), events_(events), log_(log) {}

nlohmann::json Executor::StatusPatch(const nlohmann::json& current, const Plan& plan) {
  base::JsonPatch ops;
  const nlohmann::json* status = base::Object(current, "status").value_or(nullptr);
  const nlohmann::json* conditions =
      base::Array(current, {"status", "conditions"}).value_or(nullptr);
  if (conditions != nullptr) {
    ops.Test("/status/conditions", *conditions);
  } else {
    ops.Test("/metadata/resourceVersion", base::StringAt(current, {"metadata", "resourceVersion"}));
  }
  if (status != nullptr) {
    // `add` on an existing member replaces it (RFC 6902 section 4.1).
    ops.Add("/status/conditions", ConditionsToJson(plan.conditions));
  } else {
    ops.Add("/status", {{"conditions", ConditionsToJson(plan.conditions)}});
  }
  return ops.ToJson();
}

ExecResult Executor::Apply(const api::MigrationInfo& vmim, const Plan& plan) {
  return Apply(vmim, plan, base::LogContext(log_, {{"vmim", vmim.ns + "/" + vmim.name}}));
}

ExecResult Executor::Apply(const api::MigrationInfo& vmim, const Plan& plan,
                           const base::LogContext& log) {
  ExecResult result;
  std::optional<Halt> halt = ReleaseGates(plan, log, result.released_pods);
  if (!halt) halt = CheckDeletionBasis(vmim, plan, log);
  if (!halt) halt = DeleteTargetPods(plan, log);
  if (!halt) halt = WriteConditions(vmim, plan, log);
  if (halt) {
    result.outcome = halt->outcome;
    result.error = std::move(halt->error);
    result.retry_after = halt->retry_after;
    return result;
  }
  RecordEvents(vmim, plan, log);
  return result;
}

std::optional<Executor::Halt> Executor::ReleaseGates(const Plan& plan, const base::LogContext& log,
                                                     std::vector<std::string>& released) {
  for (const PodPatch& p : plan.pod_patches) {
    try {
      client_.Patch(kube::kPods, p.ns, p.name, kube::PatchType::kJsonPatch, nlohmann::json(p.ops));
    } catch (const kube::KubeError& e) {
      Halt halt = Failed(e, /*absent_is_replan=*/true);
      log.Warn("Failed to release gate", {{"pod", p.ns + "/" + p.name}, {"error", halt.error}});
      return halt;
    }
    released.push_back(p.uid);
    log.Info("Released gate", {{"pod", p.ns + "/" + p.name}});
  }
  return std::nullopt;
}

std::optional<Executor::Halt> Executor::CheckDeletionBasis(const api::MigrationInfo& vmim,
                                                           const Plan& plan,
                                                           const base::LogContext& log) {
  if (plan.pod_deletions.empty() || !plan.conditions_changed) return std::nullopt;
  // A deletion is answered by KubeVirt failing the VMIM within milliseconds, and a re-plan
  // of a final VMIM reports nothing: so the conditions that say why must be writable once
  // the pod is gone. They are not when the plan came from a stale VMIM (the informer not
  // yet showing our last status write), so check the basis before deleting.
  try {
    const api::MigrationInfo fresh = api::MigrationInfo::FromJson(
        client_.Get(kube::kVirtualMachineInstanceMigrations, vmim.ns, vmim.name));
    if (std::optional<std::string> stale = StaleBasis(fresh, vmim)) {
      return Halt{ExecOutcome::kReplan, *stale + "; its target pod is not deleted on the old basis",
                  std::nullopt};
    }
  } catch (const kube::KubeError& e) {
    Halt halt = Failed(e, /*absent_is_replan=*/true);
    log.Warn("Failed to read the VMIM before deleting its target pod", {{"error", halt.error}});
    return halt;
  }
  return std::nullopt;
}

std::optional<Executor::Halt> Executor::DeleteTargetPods(const Plan& plan,
                                                         const base::LogContext& log) {
  for (const PodDeletion& d : plan.pod_deletions) {
    kube::DeleteOptions opts;
    opts.precondition_uid = d.uid;
    try {
      client_.Delete(kube::kPods, d.ns, d.name, opts);
      log.Info("Deleted target pod", {{"pod", d.ns + "/" + d.name}, {"why", d.why}});
    } catch (const kube::KubeError& e) {
      if (kube::DispositionOf(e) == kube::Disposition::kAbsent) continue;  // already gone
      Halt halt = Failed(e, /*absent_is_replan=*/true);
      log.Warn("Failed to delete target pod",
               {{"pod", d.ns + "/" + d.name}, {"error", halt.error}});
      return halt;
    }
  }
  return std::nullopt;
}

std::optional<Executor::Halt> Executor::WriteConditions(const api::MigrationInfo& vmim,
                                                        const Plan& plan,
                                                        const base::LogContext& log) {
  if (!plan.conditions_changed) return std::nullopt;
  // A failed test op here means KubeVirt wrote the status between our read
  // and our patch (typically the phase, on a VMIM without conditions yet).
  // Our conditions do not depend on what KubeVirt wrote, so read again and
  // retry at once, as long as the conditions are still the plan's basis.
  // This matters when the plan deleted an escaped pod: KubeVirt then fails
  // the VMIM within milliseconds, and a re-plan would find it final and
  // never report why.
  // A PATCH whose answer was lost (the connection broke; the transport may have
  // sent it again, and the second one failed its test op) may have taken effect:
  // when the conditions read back are the planned ones, it did, and the plan's
  // Events are still recorded (no later plan would have them).
  bool sent = false;
  for (int attempt = 1;; ++attempt) {
    bool sending = false;
    try {
      nlohmann::json current =
          client_.Get(kube::kVirtualMachineInstanceMigrations, vmim.ns, vmim.name);
      const api::MigrationInfo fresh = api::MigrationInfo::FromJson(current);
      if (sent && fresh.uid == vmim.uid &&
          StoresPlanned(fresh.conditions, vmim.conditions, plan.conditions)) {
        log.Debug("Conditions already updated: an earlier answer was lost");
        return std::nullopt;
      }
      if (std::optional<std::string> stale = StaleBasis(fresh, vmim)) {
        return Halt{ExecOutcome::kReplan, *stale, std::nullopt};
      }
      sending = true;
      client_.Patch(kube::kVirtualMachineInstanceMigrations, vmim.ns, vmim.name,
                    kube::PatchType::kJsonPatch, StatusPatch(current, plan), "status");
      log.Debug("Updated conditions");
      return std::nullopt;
    } catch (const kube::KubeError& e) {
      sent = sent || (sending && (kube::DispositionOf(e) == kube::Disposition::kReread ||
                                  MayHaveTakenEffect(e)));
      // A broken connection is tried again whether it broke the PATCH (guarded by its test
      // ops) or the read before it (a read is safe to repeat; after a lost answer it is the
      // only way to learn whether the write took effect).
      if (attempt < kStatusAttempts &&
          (kube::DispositionOf(e) == kube::Disposition::kReread || MayHaveTakenEffect(e))) {
        continue;
      }
      Halt halt = Failed(e, /*absent_is_replan=*/false);
      if (halt.outcome != ExecOutcome::kDone) {
        log.Warn("Failed to update conditions", {{"error", halt.error}});
      }
      if (sent) {
        // The write may have taken effect: then no later plan has these Events. Never lose
        // one silently.
        for (const EventSpec& ev : plan.events) {
          log.Error(
              "Dropped event: the conditions write may have taken effect but could not be "
              "confirmed",
              {{"reason", ev.reason}});
        }
      }
      return halt;
    }
  }
}

void Executor::RecordEvents(const api::MigrationInfo& vmim, const Plan& plan,
                            const base::LogContext& log) {
  const ObjectRef about{"kubevirt.io/v1", "VirtualMachineInstanceMigration",
                        vmim.ns,          vmim.name,
                        vmim.uid,         vmim.resource_version};
  for (const EventSpec& e : plan.events) events_.Record(about, e, log.fields());
}

}  // namespace kmt::controller
