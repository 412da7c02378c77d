// Semantics of k8s.io/component-helpers/scheduling/corev1/nodeaffinity (nodeSelectorTerms,
// nodeSelectorTerm.match) and k8s.io/apimachinery/pkg/labels Requirement.Matches.
#include "api/node_match.h"

namespace kmt::api {

bool RequirementMatchesLabels(const NodeSelectorRequirement& r, const NodeLabels& labels) {
  return LabelRequirement(r.key, NodeSelectorOp(r.op), r.values).Matches(labels.Find(r.key));
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
