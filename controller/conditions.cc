// controller/conditions.cc
#include "controller/conditions.h"

namespace kmt::controller {

const api::MigrationCondition* FindCondition(const std::vector<api::MigrationCondition>& list,
                                             std::string_view type) {
  for (const auto& c : list) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

ConditionChange SetCondition(std::vector<api::MigrationCondition>& list,
                             const DesiredCondition& want, base::WallTime now) {
  const std::string stamp = base::FormatRfc3339(now);
  for (auto& c : list) {
    if (c.type != want.type) continue;
    if (c.status == want.status && c.reason == want.reason && c.message == want.message) {
      return ConditionChange::kNone;
    }
    ConditionChange change = (c.status == want.status && c.reason == want.reason)
                                 ? ConditionChange::kMessage
                                 : ConditionChange::kTransitioned;
    if (c.status != want.status || c.last_transition_time.empty()) {
      c.last_transition_time = stamp;
    }
    c.status = want.status;
    c.reason = want.reason;
    c.message = want.message;
    c.last_probe_time = stamp;
    return change;
  }
  list.push_back({want.type, want.status, want.reason, want.message, stamp, stamp});
  return ConditionChange::kTransitioned;
}

nlohmann::json ConditionsToJson(const std::vector<api::MigrationCondition>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : list) {
    nlohmann::json j = {{"type", c.type}, {"status", c.status}};
    if (!c.reason.empty()) j["reason"] = c.reason;
    if (!c.message.empty()) j["message"] = c.message;
    j["lastProbeTime"] =
        c.last_probe_time.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.last_probe_time);
    j["lastTransitionTime"] = c.last_transition_time.empty()
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(c.last_transition_time);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace kmt::controller
