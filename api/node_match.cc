// Semantics of k8s.io/component-helpers/scheduling/corev1/nodeaffinity (nodeSelectorTerms,
// nodeSelectorTerm.match) and k8s.io/apimachinery/pkg/labels Requirement.Matches.
#include "api/node_match.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace kmt::api {

bool ParseInt64(std::string_view s, int64_t& out) {
  const bool plus = !s.empty() && s[0] == '+';
  if (plus) s.remove_prefix(1);
  if (s.empty() || s[0] == '+' || (plus && s[0] == '-')) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

namespace {

bool Contains(const std::vector<std::string>& values, std::string_view v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

}  // namespace

bool RequirementMatchesLabels(const NodeSelectorRequirement& r, const NodeLabels& labels) {
  const std::string* value = labels.Find(r.key);
  if (r.op == kOpIn) return value != nullptr && Contains(r.values, *value);
  // labels.NewRequirement rejects NotIn without values and Exists/DoesNotExist with values;
  // the scheduler then treats the term as matching nothing.
  if (r.op == kOpNotIn)
    return !r.values.empty() && (value == nullptr || !Contains(r.values, *value));
  if (r.op == kOpExists) return r.values.empty() && value != nullptr;
  if (r.op == kOpDoesNotExist) return r.values.empty() && value == nullptr;
  if (r.op == kOpGt || r.op == kOpLt) {
    int64_t have = 0, want = 0;
    if (value == nullptr || r.values.size() != 1 || !ParseInt64(*value, have) ||
        !ParseInt64(r.values[0], want)) {
      return false;
    }
    return r.op == kOpGt ? have > want : have < want;
  }
  return false;
}

bool FieldRequirementMatchesNode(const NodeSelectorRequirement& r, std::string_view node_name) {
  // nodeaffinity accepts exactly one value for a field requirement, and only metadata.name.
  if (r.key != kFieldMetadataName || r.values.size() != 1) return false;
  if (r.op == kOpIn) return r.values[0] == node_name;
  if (r.op == kOpNotIn) return r.values[0] != node_name;
  return false;
}

bool TermMatchesNode(const NodeSelectorTerm& term, const NodeLabels& labels,
                     std::string_view node_name) {
  if (term.empty()) return false;
  for (const auto& r : term.match_expressions) {
    if (!RequirementMatchesLabels(r, labels)) return false;
  }
  for (const auto& r : term.match_fields) {
    if (!FieldRequirementMatchesNode(r, node_name)) return false;
  }
  return true;
}

bool SelectorMatchesNode(const NodeSelector& selector, const NodeLabels& labels,
                         std::string_view node_name) {
  for (const auto& t : selector.terms) {
    if (TermMatchesNode(t, labels, node_name)) return true;
  }
  return false;
}

}  // namespace kmt::api
