// controller/leader_election.h — one active reconciler among the replicas,
// through a coordination.k8s.io/v1 Lease, with client-go's semantics
// (k8s.io/client-go/tools/leaderelection/leaderelection.go):
//
//   - Acquire: try every retry_period (plus jitter) to create the Lease or take
//     it over. A Lease held by someone else counts as expired only once
//     leaseDurationSeconds (from the Lease) have passed on *our* clock since we
//     last saw the record change, so clock skew between replicas is harmless.
//   - Renew: the leader rewrites renewTime every retry_period; if no renewal
//     succeeds within renew_deadline it stops leading (renew_deadline <
//     lease_duration, so it stops before anyone else may take over).
//   - Losing leadership is final for this elector: on_stopped_leading runs once
//     and the process is expected to stop reconciling or exit, as
//     controller-runtime's manager does.
//   - Stop() with release_on_cancel (SIGTERM): the leader writes an empty
//     holderIdentity with leaseDurationSeconds 1, so a successor acquires at
//     once instead of waiting out the lease.
// Lease fields written: holderIdentity, leaseDurationSeconds, acquireTime,
// renewTime (MicroTime), leaseTransitions (+1 on every change of holder).
//
// Attempts run on the Clock's timers (with blocking KubeClient calls, so give
// it a Clock of its own in the binary). Callbacks run on that timer thread.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"
#include "kube/client.h"
#include "kube/error.h"

namespace kmt::controller {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per replica (pod name + random suffix)
  base::Duration lease_duration = std::chrono::seconds(15);
  base::Duration renew_deadline = std::chrono::seconds(10);
  base::Duration retry_period = std::chrono::seconds(2);
  bool release_on_cancel = true;
  // Extra delay added to each acquire retry (client-go: up to 1.2 x retry_period,
  // random). Tests pass a deterministic function.
  std::function<base::Duration(base::Duration retry_period)> jitter;
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& holder)> on_new_leader;  // observed holder changed
  // A Lease read or write that failed (what, and the error); the attempt is retried on the
  // next period. A 409 (another replica wrote first) is the normal race and not reported.
  std::function<void(const std::string& what, const std::string& error)> on_error;
};

// The lease record as read from or written to the API.
struct LeaseRecord {
  std::string holder_identity;
  int64_t lease_duration_seconds = 0;
  std::string acquire_time;  // MicroTime text
  std::string renew_time;    // MicroTime text
  int64_t lease_transitions = 0;

  bool operator==(const LeaseRecord&) const = default;
  static LeaseRecord FromLease(const nlohmann::json& lease);
  nlohmann::json ToSpec() const;
};

class LeaderElector {
 public:
  LeaderElector(kube::KubeClient& client, base::Clock& clock, LeaderElectionConfig config);
  ~LeaderElector();  // cancels timers; does not release (call Stop for that)
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Schedules the first attempt (immediately, on the clock).
  void Start();
  // Stops trying; a leader releases the lease when release_on_cancel. Does not
  // call on_stopped_leading (the caller is stopping anyway). Idempotent.
  void Stop();

  bool IsLeader() const;
  // The holder we last observed ("" when none / unknown).
  std::string ObservedHolder() const;

  // One acquire-or-renew attempt, as client-go's tryAcquireOrRenew. True when
  // we hold the lease afterwards. Public for tests; normally driven by timers.
  bool TryAcquireOrRenew();

 private:
  // Hands a failed Lease call to config_.on_error (not a 409: that is the race).
  void Report(const char* what, const kube::KubeError& e) const;
  enum class State { kIdle, kAcquiring, kLeading, kStopped };
  void Tick();
  void Schedule(base::Duration d);
  bool Release();
  void Observe(const LeaseRecord& record);

  kube::KubeClient& client_;
  base::Clock& clock_;
  LeaderElectionConfig config_;
  mutable std::mutex mu_;  // guards the fields below; never held across API calls
  State state_ = State::kIdle;
  std::optional<base::TimerId> timer_;
  std::optional<LeaseRecord> observed_;
  base::SteadyTime observed_time_{};
  base::SteadyTime renew_round_start_{};
  std::string reported_holder_;
};

}  // namespace kmt::controller
