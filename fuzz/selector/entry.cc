// fuzz/selector/entry.cc — arbitrary bytes as a label selector and as a field selector,
// through the real parsers and matchers of kube/selector.h.
//
// Checks:
//   - LabelSelector::Parse and FieldSelector::Parse throw std::invalid_argument (whose
//     message names the selector) or nothing; Matches never throws;
//   - every parsed label requirement has a valid key and valid values, one value for
//     =, !=, >, < (an integer for > and <), one or more sorted distinct ones for in/notin;
//   - the matching the header promises, per requirement: `!=` and `notin` match objects
//     that lack the key, `in` requires it; =, in, exists, >, < match a label that satisfies
//     them and !=, notin, !key do not; a selector matches iff every requirement does.
#include "fuzz/entry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "kube/selector.h"

namespace kmt::fuzz {
namespace {

using Json = nlohmann::json;
using Op = kube::LabelRequirement::Op;

std::string CheckRequirement(const kube::LabelRequirement& r) {
  if (!kube::IsValidLabelKey(r.key)) return "an invalid key \"" + r.key + "\"";
  for (const std::string& v : r.values) {
    if (!kube::IsValidLabelValue(v)) return "an invalid value \"" + v + "\"";
  }
  const Json absent = Json::object();
  const Json missing_all = nullptr;
  const bool set = r.op == Op::kIn || r.op == Op::kNotIn;
  const bool no_values = r.op == Op::kExists || r.op == Op::kDoesNotExist;
  if (no_values != r.values.empty()) return "values on exists/!key, or none on another operator";
  if (!set && !no_values && r.values.size() != 1) return "more than one value";
  if (set && !std::ranges::is_sorted(r.values)) return "unsorted set";
  if (set && std::ranges::adjacent_find(r.values) != r.values.end()) {
    return "a set with a duplicate";
  }
  const bool matches_absent =
      r.op == Op::kDoesNotExist || r.op == Op::kNotEquals || r.op == Op::kNotIn;
  if (kube::RequirementMatches(r, absent) != matches_absent ||
      kube::RequirementMatches(r, missing_all) != matches_absent) {
    return fmt::format("requirement on \"{}\" (op {}) against an object without the key", r.key,
                       static_cast<int>(r.op));
  }
  // A label that satisfies the requirement (or, for the negative operators, violates it).
  std::string value = r.values.empty() ? "x" : r.values.front();
  if (r.op == Op::kGt || r.op == Op::kLt) {
    const int64_t n = std::stoll(value);
    if ((r.op == Op::kGt && n == INT64_MAX) || (r.op == Op::kLt && n == INT64_MIN)) return {};
    value = std::to_string(r.op == Op::kGt ? n + 1 : n - 1);
  }
  const Json labels = {{r.key, value}};
  const bool positive = !matches_absent;
  if (kube::RequirementMatches(r, labels) != positive) {
    return fmt::format(R"(requirement on "{}" (op {}) against label "{}")", r.key,
                       static_cast<int>(r.op), value);
  }
  return {};
}

std::string CheckLabel(std::string_view text) {
  kube::LabelSelector s;
  try {
    s = kube::LabelSelector::Parse(text);
  } catch (const std::invalid_argument& e) {
    if (!std::string_view(e.what()).starts_with("label selector \"")) {
      return std::string("a parse error that does not name the selector: ") + e.what();
    }
    return {};
  }
  Json labels = Json::object();
  for (const kube::LabelRequirement& r : s.requirements()) {
    if (std::string broken = CheckRequirement(r); !broken.empty()) {
      return fmt::format("label selector \"{}\": {}", text, broken);
    }
    if (!r.values.empty()) labels[r.key] = r.values.back();
  }
  bool all = true;
  for (const kube::LabelRequirement& r : s.requirements()) {
    all = all && kube::RequirementMatches(r, labels);
  }
  if (s.Matches(labels) != all) return "Matches is not the AND of its requirements";
  if (s.Empty() != s.requirements().empty()) return "Empty() disagrees with requirements()";
  return {};
}

std::string CheckField(std::string_view text) {
  kube::FieldSelector s;
  try {
    s = kube::FieldSelector::Parse(text);
  } catch (const std::invalid_argument&) {
    return {};
  }
  Json object = Json::object();
  for (const kube::FieldRequirement& r : s.requirements()) {
    if (r.field.empty()) return "a field requirement without a field";
    (void)kube::FieldValue(object, r.field);
  }
  (void)s.Matches(object);
  (void)s.Matches(Json::parse(R"({"metadata":{"name":"n"},"spec":{"nodeName":null}})"));
  return {};
}

std::string Check(std::string_view text) {
  if (std::string broken = CheckLabel(text); !broken.empty()) return broken;
  return CheckField(text);
}

}  // namespace

std::string CheckTarget(std::string_view input) { return Check(input); }

}  // namespace kmt::fuzz
