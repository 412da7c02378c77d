// api/label_requirement.h — the one label-requirement matcher of the project, with
// Kubernetes' exact semantics (k8s.io/apimachinery/pkg/labels/selector.go):
//
//   - NewRequirement decides whether a requirement is valid at all: the key is a
//     qualified name; In/NotIn have at least one value, =, == and != exactly one,
//     Exists/DoesNotExist none, Gt/Lt exactly one that strconv.ParseInt(v, 10, 64)
//     accepts; and every value is a valid label value (≤ 63 chars of [A-Za-z0-9_.-],
//     starting and ending alphanumeric: so "+5", "-0", "-5" and " 5" are no Gt/Lt
//     operand, although ParseInt would accept the first three). An invalid requirement
//     matches nothing: the scheduler's nodeaffinity (k8s.io/component-helpers/scheduling/
//     corev1/nodeaffinity) then lets its whole term match no node, and a label selector
//     string holding one does not parse.
//   - Requirement.Matches: In and = need the key with one of the values; NotIn and != also
//     match an object without the key; Exists/DoesNotExist test the key; Gt/Lt need the
//     key with a value that ParseInt accepts (a label "+5" is 5, "-0" is 0, " 5" and
//     "9223372036854775808" are not integers) and compare.
//
// api/node_match.h (node selector terms), api/explain.h (the explainer, over interned
// ids) and kube/selector.h (label selector strings) all decide through this class;
// label_requirement_test.cc holds the one table every path is checked against.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kmt::api {

// selection.Operator: the node selector operators and the label selector string forms
// (= and == are both kEquals).
enum class LabelOp : uint8_t {
  kIn,
  kNotIn,
  kEquals,
  kNotEquals,
  kExists,
  kDoesNotExist,
  kGt,
  kLt,
  kUnknown
};

// A core/v1 NodeSelectorOperator ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt");
// anything else is kUnknown (nodeaffinity: "not a valid selector operator", no match).
LabelOp NodeSelectorOp(std::string_view op);

// strconv.ParseInt(s, 10, 64): an optional '+' or '-', then one or more decimal digits,
// nothing else (no spaces, no "0x", no '_'), in int64 range.
bool ParseInt64(std::string_view s, int64_t& out);

class LabelRequirement {
 public:
  // Checks the requirement once (NewRequirement). Keeps views of `key` and `values`:
  // they must outlive this object.
  LabelRequirement(std::string_view key, LabelOp op, std::span<const std::string> values);

  bool valid() const { return valid_; }
  std::string_view key() const { return key_; }
  LabelOp op() const { return op_; }
  std::span<const std::string> values() const { return values_; }

  // Requirement.Matches. `value`: the object's value for key(), nullptr when it has none.
  bool Matches(const std::string* value) const {
    return Matches(
        value != nullptr, [&] { return std::ranges::find(values_, *value) != values_.end(); },
        [&]() -> std::string_view { return *value; });
  }

  // The same decision for callers that hold label values in another form (the explainer
  // compares interned ids): `present` says whether the object has key(); `in_values()`
  // whether its value is one of values(); `text()` its value as text (Gt/Lt only). Both
  // are only called when `present`.
  template <typename InValues, typename Text>
  bool Matches(bool present, InValues&& in_values, Text&& text) const {
    if (!valid_) return false;
    switch (op_) {
      case LabelOp::kIn:
      case LabelOp::kEquals:
        return present && in_values();
      case LabelOp::kNotIn:
      case LabelOp::kNotEquals:
        return !present || !in_values();
      case LabelOp::kExists:
        return present;
      case LabelOp::kDoesNotExist:
        return !present;
      case LabelOp::kGt:
      case LabelOp::kLt: {
        int64_t have = 0;
        if (!present || !ParseInt64(text(), have)) return false;
        return op_ == LabelOp::kGt ? have > operand_ : have < operand_;
      }
      case LabelOp::kUnknown:
        return false;
    }
    return false;
  }

 private:
  std::string_view key_;
  std::span<const std::string> values_;
  int64_t operand_ = 0;  // Gt / Lt
  LabelOp op_;
  bool valid_ = false;
};

}  // namespace kmt::api
