#include "controller/policy_status.h"

#include <algorithm>
#include <exception>
#include <string>

#include "api/names.h"
#include "api/policy.h"
#include "base/json.h"
#include "kube/paging.h"
#include "kube/resources.h"

namespace kmt::controller {
namespace {

using Json = nlohmann::json;

const Json* ReadyCondition(const Json& status) {
  const auto conditions = base::Array(status, "conditions");
  if (!conditions) return nullptr;
  for (const Json& c : **conditions) {
    if (base::StringAt(c, "type") == kPolicyReady) return &c;
  }
  return nullptr;
}

}  // namespace

Json DesiredPolicyStatus(const Json& policy, const std::vector<api::MigrationInfo>& carrying,
                         base::WallTime now) {
  const int64_t generation = base::Int(policy, {"metadata", "generation"}).value_or(0);
  const Json* current = base::Member(policy, "status");
  Json status = {{"observedGeneration", generation},
                 {"matchedMigrations", static_cast<int64_t>(carrying.size())}};
  const api::MigrationInfo* newest = nullptr;
  for (const api::MigrationInfo& m : carrying) {
    if (newest == nullptr || m.created > newest->created ||
        (m.created == newest->created && m.ns + "/" + m.name > newest->ns + "/" + newest->name)) {
      newest = &m;
    }
  }
  if (newest != nullptr) {
    status["lastAppliedMigration"] = newest->ns + "/" + newest->name;
    if (!newest->created.empty()) status["lastAppliedTime"] = newest->created;
  } else if (current != nullptr && current->is_object()) {
    // The last one applied stays on record after its VMIM is gone.
    for (const char* k : {"lastAppliedMigration", "lastAppliedTime"}) {
      if (auto it = current->find(k); it != current->end()) status[k] = *it;
    }
  }
  api::PolicyParse parsed = api::ParsePolicy(policy);
  Json ready = {{"type", kPolicyReady}, {"observedGeneration", generation}};
  if (parsed.policy) {
    ready["status"] = api::kStatusTrue;
    ready["reason"] = kPolicyReasonValid;
    ready["message"] = "the term is valid; evacuations that match get it";
  } else {
    ready["status"] = api::kStatusFalse;
    ready["reason"] = kPolicyReasonInvalidTerm;
    ready["message"] =
        "the operator skips this policy: " +
        (parsed.causes.empty() ? std::string("invalid") : api::ToString(parsed.causes.front()));
  }
  const Json* before = current != nullptr ? ReadyCondition(*current) : nullptr;
  if (before != nullptr && base::StringAt(*before, "status") == base::StringAt(ready, "status") &&
      before->contains("lastTransitionTime")) {
    ready["lastTransitionTime"] = (*before)["lastTransitionTime"];
  } else {
    ready["lastTransitionTime"] = base::FormatRfc3339(now);
  }
  status["conditions"] = Json::array({ready});
  return status;
}

PolicyStatusWriter::PolicyStatusWriter(kube::KubeClient& client, base::Clock& clock,
                                       base::Logger& log, Migrations migrations,
                                       base::Duration interval)
    : client_(client),
      clock_(clock),
      log_(log),
      migrations_(std::move(migrations)),
      interval_(interval) {}

PolicyStatusWriter::~PolicyStatusWriter() { Stop(); }

void PolicyStatusWriter::Start() {
  std::scoped_lock lock(mu_);
  if (running_) return;
  running_ = true;
  timer_ = clock_.RunAfter(base::Duration::zero(), [this] {
    Pass();
    Schedule(interval_);
  });
}

void PolicyStatusWriter::Schedule(base::Duration delay) {
  std::scoped_lock lock(mu_);
  if (!running_) return;
  timer_ = clock_.RunAfter(delay, [this] {
    Pass();
    Schedule(interval_);
  });
}

void PolicyStatusWriter::Stop() {
  std::scoped_lock lock(mu_);
  running_ = false;
  if (timer_) clock_.Cancel(*timer_);
  timer_.reset();
}

void PolicyStatusWriter::Notify() {
  std::scoped_lock lock(mu_);
  if (!running_ || pass_pending_) return;
  pass_pending_ = true;
  clock_.RunAfter(std::chrono::milliseconds(200), [this] {
    {
      std::scoped_lock l(mu_);
      pass_pending_ = false;
      if (!running_) return;
    }
    Pass();
  });
}

int PolicyStatusWriter::Pass() {
  Json list;
  try {
    list = kube::ListAll(client_, kube::kMigrationTargetPolicies, "", {});
  } catch (const std::exception& e) {
    log_.Error("Failed to list MigrationTargetPolicies", {{"error", e.what()}});
    return 0;
  }
  const std::vector<api::MigrationInfo> all = migrations_();
  const base::WallTime now = clock_.WallNow();
  int written = 0;
  const auto items = base::Array(list, "items");
  if (!items) return 0;
  for (const Json& policy : **items) {
    const std::string name = base::StringAt(policy, {"metadata", "name"});
    std::vector<api::MigrationInfo> carrying;
    std::ranges::copy_if(all, std::back_inserter(carrying),
                         [&](const api::MigrationInfo& m) { return m.policy == name; });
    const Json desired = DesiredPolicyStatus(policy, carrying, now);
    const Json* current = base::Member(policy, "status");
    if (current != nullptr && *current == desired) continue;
    try {
      client_.Patch(kube::kMigrationTargetPolicies, "", name, kube::PatchType::kMergePatch,
                    Json{{"status", desired}}, "status");
      ++written;
    } catch (const std::exception& e) {
      log_.Error("Failed to update the status of a MigrationTargetPolicy",
                 {{"policy", name}, {"error", e.what()}});
    }
  }
  return written;
}

}  // namespace kmt::controller
