// Semantics of k8s.io/apimachinery/pkg/labels/selector.go (NewRequirement,
// Requirement.Matches) and strconv.ParseInt; see label_requirement.h.
#include "api/label_requirement.h"

#include <charconv>

#include "api/label_validation.h"
#include "api/node_selector.h"

namespace kmt::api {

LabelOp NodeSelectorOp(std::string_view op) {
  if (op == kOpIn) return LabelOp::kIn;
  if (op == kOpNotIn) return LabelOp::kNotIn;
  if (op == kOpExists) return LabelOp::kExists;
  if (op == kOpDoesNotExist) return LabelOp::kDoesNotExist;
  if (op == kOpGt) return LabelOp::kGt;
  if (op == kOpLt) return LabelOp::kLt;
  return LabelOp::kUnknown;
}

bool ParseInt64(std::string_view s, int64_t& out) {
  // std::from_chars takes a '-' but no '+'; ParseInt takes either, once ("+-5" is no integer).
  const bool plus = !s.empty() && s[0] == '+';
  if (plus) s.remove_prefix(1);
  if (s.empty() || s[0] == '+' || (plus && s[0] == '-')) return false;
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return false;
  out = v;
  return true;
}

LabelRequirement::LabelRequirement(std::string_view key, LabelOp op,
                                   std::span<const std::string> values)
    : key_(key), values_(values), op_(op) {
  bool ok = IsQualifiedName(key).empty();
  switch (op) {
    case LabelOp::kIn:
    case LabelOp::kNotIn:
      ok = ok && !values.empty();
      break;
    case LabelOp::kEquals:
    case LabelOp::kNotEquals:
      ok = ok && values.size() == 1;
      break;
    case LabelOp::kExists:
    case LabelOp::kDoesNotExist:
      ok = ok && values.empty();
      break;
    case LabelOp::kGt:
    case LabelOp::kLt:
      ok = ok && values.size() == 1 && ParseInt64(values[0], operand_);
      break;
    case LabelOp::kUnknown:
      ok = false;
      break;
  }
  for (const std::string& v : values) ok = ok && IsValidLabelValue(v).empty();
  valid_ = ok;
}

}  // namespace kmt::api
