// controller/policy_status.h — the status of every MigrationTargetPolicy, written by the
// leader: how many VMIMs that exist now carry the policy's term (the webhook names the
// policy in migration-target.kubevirt.io/policy), the newest of them, and a Ready condition
// (False with reason InvalidTerm and the first broken rule when the policy does not parse:
// the webhook skips such a policy, so this is where an admin learns why it never applies).
//
// One pass: LIST the policies, count from the VMIM cache, PATCH .../status of the policies
// whose status differs (computed, compared, written only when different, as KubeVirt's
// controllers do). Passes run on a clock of their own every `interval` and whenever Notify()
// is called (a VMIM carrying a policy appeared or changed), at most one pending at a time.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/projections.h"
#include "base/clock.h"
#include "base/log.h"
#include "kube/client.h"

namespace kmt::controller {

inline constexpr std::string_view kPolicyReady = "Ready";
inline constexpr std::string_view kPolicyReasonValid = "Valid";
inline constexpr std::string_view kPolicyReasonInvalidTerm = "InvalidTerm";

// The status `policy` should carry, given the cached VMIMs that name it (`carrying`). The
// Ready condition keeps its lastTransitionTime while its status does not change.
nlohmann::json DesiredPolicyStatus(const nlohmann::json& policy,
                                   const std::vector<api::MigrationInfo>& carrying,
                                   base::WallTime now);

class PolicyStatusWriter {
 public:
  using Migrations = std::function<std::vector<api::MigrationInfo>()>;  // those with a policy
  PolicyStatusWriter(kube::KubeClient& client, base::Clock& clock, base::Logger& log,
                     Migrations migrations, base::Duration interval = std::chrono::seconds(30));
  ~PolicyStatusWriter();  // Stop()

  void Start();
  void Stop();
  void Notify();  // a pass soon (coalesced)

  // One pass now; returns the number of policies whose status was written.
  int Pass();

 private:
  void Schedule(base::Duration delay);

  kube::KubeClient& client_;
  base::Clock& clock_;
  base::Logger& log_;
  Migrations migrations_;
  base::Duration interval_;
  std::mutex mu_;
  bool running_ = false;
  std::optional<base::TimerId> timer_;
  bool pass_pending_ = false;  // a Notify() pass is scheduled
};

}  // namespace kmt::controller
