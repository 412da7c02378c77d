// api/node_match.h — does a node selector match a node (Kubernetes' semantics,
// k8s.io/component-helpers/scheduling/corev1/nodeaffinity and
// k8s.io/apimachinery/pkg/labels/selector.go Requirement.Matches):
//  - terms are ORed, requirements in a term ANDed; a term with no requirements
//    matches nothing (and so does a selector with no terms);
//  - label requirements: api/label_requirement.h (one implementation for the project);
//    a requirement labels.NewRequirement rejects matches nothing;
//  - matchFields: In / NotIn with exactly one value (anything else: the term matches
//    nothing); the node's only field is metadata.name, any other key reads as "";
//    a node without a name skips matchFields (nodeaffinity's extractNodeFields). The
//    webhook's validation rejects such keys; hack/differential.sh checks all of this
//    against nodeaffinity itself.
#pragma once

#include <cstdint>
#include <string_view>

#include "api/label_requirement.h"
#include "api/labels.h"
#include "api/node_selector.h"

namespace kmt::api {

using NodeLabels = Labels;

bool RequirementMatchesLabels(const NodeSelectorRequirement& r, const NodeLabels& labels);
bool FieldRequirementMatchesNode(const NodeSelectorRequirement& r, std::string_view node_name);
bool TermMatchesNode(const NodeSelectorTerm& term, const NodeLabels& labels,
                     std::string_view node_name);
bool SelectorMatchesNode(const NodeSelector& selector, const NodeLabels& labels,
                         std::string_view node_name);

}  // namespace kmt::api
