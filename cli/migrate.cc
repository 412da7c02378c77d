#include "cli/migrate.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "api/names.h"
#include "base/json.h"
#include "cli/duration.h"
#include "cli/printer.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

std::string GenerateNamePrefix(const std::string& vmi) {
  // generateName + 5 random characters must stay a valid name (≤ 253, and
  // KubeVirt labels pods with the VMIM name, so keep it ≤ 63).
  std::string prefix = vmi.substr(0, 63 - 5 - 11) + "-migration-";
  return prefix;
}

// Cancels the watch registered with Watching() once `timeout` has passed on `clock` (a timer
// of the clock, so a watch blocked in Next() ends at the deadline).
class Deadline {
 public:
  Deadline(base::Clock& clock, std::chrono::milliseconds timeout)
      : clock_(clock), at_(clock.Now() + timeout), state_(std::make_shared<State>()) {
    timer_ = clock_.RunAfter(timeout, [state = state_] {
      std::scoped_lock lock(state->mu);
      state->expired = true;
      if (state->stream) state->stream->Cancel();
    });
  }
  ~Deadline() {
    clock_.Cancel(timer_);
    std::scoped_lock lock(state_->mu);
    state_->stream = nullptr;  // a timer firing after this cancels nothing
  }
  // Registers the current stream (nullptr to clear). Returns false when expired.
  bool Watching(kube::WatchStream* s) {
    std::scoped_lock lock(state_->mu);
    state_->stream = s;
    if (state_->expired && s) s->Cancel();
    return !state_->expired;
  }
  bool expired() {
    std::scoped_lock lock(state_->mu);
    return state_->expired || clock_.Now() >= at_;
  }
  base::Duration remaining() const { return std::max(at_ - clock_.Now(), base::Duration{}); }

 private:
  // Shared with the timer's callback, which may outlive the Deadline.
  struct State {
    std::mutex mu;
    bool expired = false;
    kube::WatchStream* stream = nullptr;
  };
  base::Clock& clock_;
  const base::SteadyTime at_;
  std::shared_ptr<State> state_;
  base::TimerId timer_ = 0;
};

bool IsOperatorCondition(const std::string& type) {
  return type == api::kConditionTermApplied || type == api::kConditionTargetPodUnschedulable;
}

// What the plugin reports about a VMIM, compared between events.
struct Seen {
  std::string phase;
  std::map<std::string, std::string> conditions;  // type → "status reason message"
};

// Reads tolerate any shape (base/json.h): a VMIM answer the plugin does not
// understand reports nothing rather than throwing.
void Report(const json& vmim, Seen& seen, Streams io) {
  std::string phase = base::StringAt(vmim, {"status", "phase"});
  if (!phase.empty() && phase != seen.phase) {
    std::string line = "phase: " + phase;
    std::string target = base::StringAt(vmim, {"status", "migrationState", "targetNode"});
    if (!target.empty()) line += " (target node " + target + ")";
    io.out << line << "\n";
    seen.phase = phase;
  }
  const json* conditions = base::Member(vmim, {"status", "conditions"});
  if (conditions == nullptr || !conditions->is_array()) return;
  for (const auto& c : *conditions) {
    std::string type = base::StringAt(c, {"type"});
    if (!IsOperatorCondition(type)) continue;
    const std::string status = base::StringAt(c, {"status"});
    const std::string reason = base::StringAt(c, {"reason"});
    const std::string message = base::StringAt(c, {"message"});
    std::string text = status;
    text.append(" ").append(reason).append(" ").append(message);
    if (seen.conditions[type] == text) continue;
    seen.conditions[type] = text;
    io.out << "condition " << type << "=" << status << " (" << reason << "): " << message << "\n";
  }
}

std::string FailureReason(const json& vmim, const Seen& seen) {
  std::string r = base::StringAt(vmim, {"status", "migrationState", "failureReason"});
  if (!r.empty()) return r;
  auto it = seen.conditions.find(std::string(api::kConditionTargetPodUnschedulable));
  if (it != seen.conditions.end() && it->second.starts_with("True")) {
    return "target pod unschedulable: " + it->second.substr(5);
  }
  it = seen.conditions.find(std::string(api::kConditionTermApplied));
  if (it != seen.conditions.end() && it->second.starts_with("False")) {
    return "added node selector term not applied: " + it->second.substr(6);
  }
  return "see 'kubectl migrate status " + base::StringAt(vmim, {"metadata", "name"}) + "'";
}

}  // namespace

json BuildMigration(const std::string& ns, const std::string& vmi,
                    const api::NodeSelectorTerm& term) {
  return json{
      {"apiVersion", "kubevirt.io/v1"},
      {"kind", "VirtualMachineInstanceMigration"},
      {"metadata",
       {{"generateName", GenerateNamePrefix(vmi)},
        {"namespace", ns},
        {"annotations", {{std::string(api::kAddedTermAnnotation), api::ToJson(term).dump()}}}}},
      {"spec", {{"vmiName", vmi}}},
  };
}

std::string FormatKubeError(const kube::KubeError& e) {
  const json& st = e.status();
  if (const json* m = base::Member(st, {"message"}); m != nullptr && m->is_string()) {
    const std::string reason = base::StringAt(st, {"reason"});
    const auto& message = m->get_ref<const std::string&>();
    if (reason.empty()) return "Error from server: " + message;
    return "Error from server (" + reason + "): " + message;
  }
  return std::string("error: ") + e.what();
}

int RunMigrate(const Invocation& inv, const std::string& ns, const api::NodeSelectorTerm& term,
               kube::KubeClient& client, Streams io, base::Clock& clock) {
  json vmim = BuildMigration(ns, inv.name, term);
  if (inv.dry_run == DryRun::kClient) {
    io.out << Render(vmim, inv.output, "created", " (dry run)");
    return 0;
  }
  json created;
  try {
    // The VMI must exist: KubeVirt would otherwise accept the VMIM and fail it later.
    client.Get(kube::kVirtualMachineInstances, ns, inv.name);
    kube::WriteOptions opts;
    opts.dry_run = inv.dry_run == DryRun::kServer;
    opts.field_validation = "Strict";
    created = client.Create(kube::kVirtualMachineInstanceMigrations, ns, vmim, opts);
  } catch (const kube::KubeError& e) {
    io.err << FormatKubeError(e) << "\n";
    return 1;
  }
  io.out << Render(created, inv.output, "created",
                   inv.dry_run == DryRun::kServer ? " (server dry run)" : "");
  if (!inv.wait) return 0;
  return WaitForMigration(ns, base::StringAt(created, {"metadata", "name"}),
                          base::StringAt(created, {"metadata", "resourceVersion"}), inv.timeout,
                          client, io, clock);
}

int WaitForMigration(const std::string& ns, const std::string& name,
                     const std::string& resource_version, std::chrono::milliseconds timeout,
                     kube::KubeClient& client, Streams io, base::Clock& clock) {
  Deadline deadline(clock, timeout);
  Seen seen;
  json last;
  std::string rv = resource_version;
  int failures = 0;
  while (!deadline.expired()) {
    try {
      if (rv.empty() || last.is_null()) {
        last = client.Get(kube::kVirtualMachineInstanceMigrations, ns, name);
        rv = base::StringAt(last, {"metadata", "resourceVersion"});
        Report(last, seen, io);
      }
      if (seen.phase == "Succeeded") return 0;
      if (seen.phase == "Failed") {
        io.err << "error: migration " << name << " failed: " << FailureReason(last, seen) << "\n";
        return 1;
      }
      kube::WatchOptions wo;
      wo.field_selector = "metadata.name=" + name;
      wo.resource_version = rv;
      wo.timeout = std::chrono::seconds(60);
      auto stream = client.Watch(kube::kVirtualMachineInstanceMigrations, ns, wo);
      // The deadline forgets the stream before it is destroyed, however this block ends.
      struct Unregister {
        Deadline& deadline;
        ~Unregister() { deadline.Watching(nullptr); }
      } unregister{deadline};
      if (!deadline.Watching(stream.get())) break;
      while (auto ev = stream->Next()) {
        if (ev->type == "ERROR") {
          // The event's object is a metav1.Status, settled below like any failed call
          // (a 410 re-reads and watches again).
          throw kube::ErrorFromWatchEvent(ev->object,
                                          "watch virtualmachineinstancemigration " + name);
        }
        const auto& obj = ev->object;
        if (std::string new_rv = base::StringAt(obj, {"metadata", "resourceVersion"});
            !new_rv.empty()) {
          rv = std::move(new_rv);
        }
        if (ev->type == "BOOKMARK") continue;
        if (ev->type == "DELETED") {
          io.err << "error: migration " << name << " was deleted\n";
          return 1;
        }
        last = obj;
        Report(last, seen, io);
        if (seen.phase == "Succeeded" || seen.phase == "Failed") break;
      }
      failures = 0;
    } catch (const kube::KubeError& e) {
      switch (kube::DispositionOf(e)) {
        case kube::Disposition::kAbsent:
          io.err << "error: migration " << name << " was deleted\n";
          return 1;
        case kube::Disposition::kRelist:
          // Our resourceVersion is too old: re-read and watch from the fresh one, at once.
          last = nullptr;
          rv.clear();
          continue;
        case kube::Disposition::kTerminal:
          io.err << FormatKubeError(e) << "\n";
          return 1;
        case kube::Disposition::kRetry:
        case kube::Disposition::kReread:  // re-reading is what the retry does
          break;
      }
      if (++failures > 5) {
        io.err << FormatKubeError(e) << "\n";
        return 1;
      }
      last = nullptr;
      // Back off, and no earlier than the server asked (never past the deadline).
      base::Duration wait = std::chrono::milliseconds(200 * failures);
      if (e.retry_after()) wait = std::max<base::Duration>(wait, *e.retry_after());
      clock.Sleep(std::min(wait, deadline.remaining()));
    }
    if (seen.phase == "Succeeded") return 0;
    if (seen.phase == "Failed") {
      io.err << "error: migration " << name << " failed: " << FailureReason(last, seen) << "\n";
      return 1;
    }
  }
  io.err << "error: timed out after " << FormatDuration(timeout) << " waiting for migration "
         << name << " (phase " << (seen.phase.empty() ? "unknown" : seen.phase)
         << "); last known reason: " << FailureReason(last.is_null() ? json::object() : last, seen)
         << "\n";
  return 1;
}

}  // namespace kmt::cli
