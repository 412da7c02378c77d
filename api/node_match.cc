// Semantics of k8s.io/component-helpers/scheduling/corev1/nodeaffinity (nodeSelectorTerms,
// nodeSelectorTerm.match) and k8s.io/apimachinery/pkg/labels Requirement.Matches.
#include "api/node_match.h"

namespace kmt::api {

bool RequirementMatchesLabels(const NodeSelectorRequirement& r, const NodeLabels& labels) {
  return LabelRequirement(r.key, NodeSelectorOp(r.op), r.values).Matches(labels.Find(r.key));
}

bool FieldRequirementMatchesNode(const NodeSelectorRequirement& r, std::string_view node_name) {
  // nodeSelectorRequirementsAsFieldSelector: In / NotIn with exactly one value, else the
  // term is an error (no match). It does not check the key: the node's field set holds
  // only metadata.name, and fields.Set.Get of any other key is "" (so `x NotIn [a]`
  // matches, `x In [""]` too). A node without a name has an empty field set, and the
  // term's matchFields are then not checked at all (nodeSelectorTerm.match).
  const bool in = r.op == kOpIn;
  if ((!in && r.op != kOpNotIn) || r.values.size() != 1) return false;
  if (node_name.empty()) return true;
  const std::string_view field = r.key == kFieldMetadataName ? node_name : std::string_view();
  return (r.values[0] == field) == in;
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
