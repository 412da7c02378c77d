// api/validation.h — validation of a NodeSelectorTerm, mirroring Kubernetes' core/v1
// rules (k8s.io/kubernetes/pkg/apis/core/validation/validation.go:
// ValidateNodeSelectorTerm, ValidateNodeSelectorRequirement,
// validateNodeFieldSelectorRequirement) plus this project's own limits (at least one
// requirement, at most kMaxRequirements in total). Every cause is returned, not just
// the first, in the order Kubernetes would report them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "api/cause.h"
#include "api/node_selector.h"

namespace kmt::api {

// matchExpressions + matchFields together.
inline constexpr size_t kMaxRequirements = 64;

// `path` prefixes each cause's field (empty: "matchExpressions[0].key").
std::vector<Cause> ValidateNodeSelectorTerm(const NodeSelectorTerm& term, const std::string& path);

}  // namespace kmt::api
