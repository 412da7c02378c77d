// controller/conditions.h — the operator's VMIM status conditions, in
// KubeVirt's shape (type, status, reason, message, lastProbeTime,
// lastTransitionTime), merged into the list KubeVirt also writes to.
//
// Rules (as KubeVirt's and apimachinery's condition helpers):
//   - a condition we do not own is kept as it is;
//   - setting a condition to the same status, reason and message changes
//     nothing (no write, no probe time bump);
//   - lastTransitionTime changes only when the status changes (or the
//     condition is new); lastProbeTime is the time of our last write of it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/projections.h"
#include "base/clock.h"

namespace kmt::controller {

struct DesiredCondition {
  DesiredCondition() = default;
  // From the names of api/names.h (kConditionTermApplied, kStatusTrue, kReasonScheduled, ...).
  DesiredCondition(std::string_view type, std::string_view status, std::string_view reason,
                   std::string message)
      : type(type), status(status), reason(reason), message(std::move(message)) {}

  std::string type;
  std::string status;  // "True", "False" or "Unknown"
  std::string reason;
  std::string message;
};

enum class ConditionChange {
  kNone,          // identical: nothing to write
  kMessage,       // same status and reason, new message
  kTransitioned,  // new condition, or its status or reason changed
};

// Applies `want` to `list` at `now` and says what changed.
ConditionChange SetCondition(std::vector<api::MigrationCondition>& list,
                             const DesiredCondition& want, base::WallTime now);

// The condition of that type, or nullptr.
const api::MigrationCondition* FindCondition(const std::vector<api::MigrationCondition>& list,
                                             std::string_view type);

// status.conditions JSON as KubeVirt serialises it: reason and message are
// omitted when empty (omitempty); the two times are null when unset
// (metav1.Time without omitempty), never "" (which the API server rejects).
nlohmann::json ConditionsToJson(const std::vector<api::MigrationCondition>& list);

}  // namespace kmt::controller
