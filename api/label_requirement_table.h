// api/label_requirement_table.h — the one table of label-requirement matching (testonly).
//
// Each row is a requirement, what the object has under its key, and what
// k8s.io/apimachinery/pkg/labels/selector.go (NewRequirement + Requirement.Matches, with
// strconv.ParseInt) decides. api/label_requirement_test.cc runs it through the matcher
// and through its callers in api/ (node selector terms, the explainer);
// kube/selector_test.cc through kube's label selectors. The rows marked "disagreed" are
// where the three copies this project had before differed from each other or from
// Kubernetes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/label_requirement.h"

namespace kmt::api::testing {

struct RequirementRow {
  const char* why;
  std::string key;
  LabelOp op;
  std::vector<std::string> values;
  std::optional<std::string> label;  // the object's value for `key`; nullopt: no such label
  bool match;
};

// The NodeSelectorOperator text of an operator, or nullopt for = / != (label selector
// strings only). kUnknown gives an operator Kubernetes does not have.
inline std::optional<std::string> NodeSelectorOpText(LabelOp op) {
  switch (op) {
    case LabelOp::kIn:
      return "In";
    case LabelOp::kNotIn:
      return "NotIn";
    case LabelOp::kExists:
      return "Exists";
    case LabelOp::kDoesNotExist:
      return "DoesNotExist";
    case LabelOp::kGt:
      return "Gt";
    case LabelOp::kLt:
      return "Lt";
    case LabelOp::kUnknown:
      return "in";  // operators are case-sensitive
    default:
      return std::nullopt;
  }
}

inline const std::vector<RequirementRow>& RequirementTable() {
  using enum LabelOp;
  const std::optional<std::string> absent;
  static const std::vector<RequirementRow> rows = {
      // In / NotIn / = / !=
      {"In: one of the values", "zone", kIn, {"a", "b"}, "b", true},
      {"In: another value", "zone", kIn, {"a", "b"}, "c", false},
      {"In: no such label", "zone", kIn, {"a"}, absent, false},
      {"In: no values is invalid", "zone", kIn, {}, "a", false},
      {"In: the empty value", "zone", kIn, {""}, "", true},
      {"In: values are compared as text", "n", kIn, {"5"}, "05", false},
      {"In: an invalid label value in the requirement", "zone", kIn, {"a b"}, "a b", false},
      {"NotIn: another value", "zone", kNotIn, {"a"}, "c", true},
      {"NotIn: one of the values", "zone", kNotIn, {"a", "c"}, "c", false},
      {"NotIn: no such label", "zone", kNotIn, {"a"}, absent, true},
      {"NotIn: no values is invalid", "zone", kNotIn, {}, absent, false},
      {"=: the value", "app", kEquals, {"web"}, "web", true},
      {"=: another value", "app", kEquals, {"web"}, "db", false},
      {"=: two values is invalid", "app", kEquals, {"db", "web"}, "web", false},
      {"!=: another value", "app", kNotEquals, {"db"}, "web", true},
      {"!=: no such label", "app", kNotEquals, {"db"}, absent, true},
      {"!=: the value", "app", kNotEquals, {"web"}, "web", false},
      // Exists / DoesNotExist
      {"Exists: the label", "gpu", kExists, {}, "true", true},
      {"Exists: the empty label", "gpu", kExists, {}, "", true},
      {"Exists: no such label", "gpu", kExists, {}, absent, false},
      {"Exists: values are invalid", "gpu", kExists, {"true"}, "true", false},
      {"DoesNotExist: no such label", "gpu", kDoesNotExist, {}, absent, true},
      {"DoesNotExist: the label", "gpu", kDoesNotExist, {}, "true", false},
      {"DoesNotExist: values are invalid", "gpu", kDoesNotExist, {"x"}, absent, false},
      // keys and operators
      {"an invalid key", "bad key", kExists, {}, "x", false},
      {"a prefixed key", "example.com/gpu", kExists, {}, "x", true},
      {"an unknown operator", "gpu", kUnknown, {"true"}, "true", false},
      // Gt / Lt: the label's value, as strconv.ParseInt reads it
      {"Gt: greater", "cpus", kGt, {"8"}, "16", true},
      {"Gt: equal", "cpus", kGt, {"16"}, "16", false},
      {"Lt: smaller", "cpus", kLt, {"17"}, "16", true},
      {"Lt: equal", "cpus", kLt, {"16"}, "16", false},
      {"Gt: no such label", "cpus", kGt, {"1"}, absent, false},
      {"Lt: no such label", "cpus", kLt, {"100"}, absent, false},
      {"Gt: a label that is no integer", "cpus", kGt, {"1"}, "12x", false},
      {"Gt: the empty label", "cpus", kGt, {"1"}, "", false},
      {"Gt: label \"+5\" is 5 (disagreed)", "cpus", kGt, {"3"}, "+5", true},
      {"Lt: label \"+5\" is 5 (disagreed)", "cpus", kLt, {"6"}, "+5", true},
      {"Lt: label \"-0\" is 0", "cpus", kLt, {"1"}, "-0", true},
      {"Lt: label \"-3\" is -3", "cpus", kLt, {"0"}, "-3", true},
      {"Gt: label \"007\" is 7", "cpus", kGt, {"6"}, "007", true},
      {"Gt: label \" 5\" is no integer", "cpus", kGt, {"1"}, " 5", false},
      {"Gt: label \"5 \" is no integer", "cpus", kGt, {"1"}, "5 ", false},
      {"Gt: label \"+\" is no integer", "cpus", kGt, {"1"}, "+", false},
      {"Lt: label \"-\" is no integer", "cpus", kLt, {"1"}, "-", false},
      {"Gt: label \"+-5\" is no integer", "cpus", kGt, {"1"}, "+-5", false},
      {"Gt: label \"++5\" is no integer", "cpus", kGt, {"1"}, "++5", false},
      {"Gt: label \"0x10\" is no integer", "cpus", kGt, {"1"}, "0x10", false},
      {"Gt: label \"1_000\" is no integer", "cpus", kGt, {"1"}, "1_000", false},
      {"Gt: label \"1e3\" is no integer", "cpus", kGt, {"1"}, "1e3", false},
      {"Gt: the largest int64 label",
       "cpus",
       kGt,
       {"9223372036854775806"},
       "9223372036854775807",
       true},
      {"Gt: a label past int64 overflows", "cpus", kGt, {"1"}, "9223372036854775808", false},
      {"Lt: the smallest int64 label", "cpus", kLt, {"0"}, "-9223372036854775808", true},
      {"Lt: a label below int64 overflows", "cpus", kLt, {"0"}, "-9223372036854775809", false},
      // Gt / Lt: the requirement's value, as NewRequirement checks it (ParseInt and a
      // valid label value)
      {"Gt: operand \"007\"", "cpus", kGt, {"007"}, "8", true},
      {"Gt: operand \"+5\" is no label value (disagreed)", "cpus", kGt, {"+5"}, "6", false},
      {"Lt: operand \"+17\" is no label value (disagreed)", "cpus", kLt, {"+17"}, "16", false},
      {"Gt: operand \"-0\" is no label value", "cpus", kGt, {"-0"}, "1", false},
      {"Gt: operand \"-3\" is no label value (disagreed)", "cpus", kGt, {"-3"}, "16", false},
      {"Gt: operand \" 5\"", "cpus", kGt, {" 5"}, "6", false},
      {"Gt: operand \"x\"", "cpus", kGt, {"x"}, "6", false},
      {"Gt: operand \"+-3\"", "cpus", kGt, {"+-3"}, "6", false},
      {"Gt: the empty operand", "cpus", kGt, {""}, "6", false},
      {"Gt: an operand past int64", "cpus", kGt, {"9223372036854775808"}, "6", false},
      {"Gt: two operands", "cpus", kGt, {"1", "2"}, "6", false},
      {"Lt: no operand", "cpus", kLt, {}, "6", false},
  };
  return rows;
}

}  // namespace kmt::api::testing
