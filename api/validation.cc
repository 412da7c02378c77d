// Mirrors k8s.io/kubernetes/pkg/apis/core/validation/validation.go:
// ValidateNodeSelectorTerm, ValidateNodeSelectorRequirement (operator and value counts,
// ValidateLabelName on the key, IsValidLabelValue on each value) and
// ValidateNodeFieldSelectorRequirement (metadata.name only, In/NotIn with one value,
// ValidateNodeName = NameIsDNSSubdomain on the value), in the same order and with the same
// messages. Gt/Lt values must also parse as integers, with the message of
// k8s.io/apimachinery/pkg/labels/selector.go NewRequirement: core validation lets a
// non-integer through, and the scheduler then never matches the term.
#include "api/validation.h"

#include <cstdint>

#include "api/label_validation.h"
#include "api/node_match.h"

namespace kmt::api {
namespace {

void ValidateExpression(const NodeSelectorRequirement& r, const std::string& path,
                        std::vector<Cause>& causes) {
  const std::string values_path = ChildPath(path, "values");
  if (r.op == kOpIn || r.op == kOpNotIn) {
    if (r.values.empty()) {
      causes.push_back(
          RequiredCause(values_path, "must be specified when `operator` is 'In' or 'NotIn'"));
    }
  } else if (r.op == kOpExists || r.op == kOpDoesNotExist) {
    if (!r.values.empty()) {
      causes.push_back(ForbiddenCause(
          values_path, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
    }
  } else if (r.op == kOpGt || r.op == kOpLt) {
    if (r.values.size() != 1) {
      causes.push_back(RequiredCause(
          values_path, "must be specified single value when `operator` is 'Lt' or 'Gt'"));
    } else if (int64_t ignored = 0; !ParseInt64(r.values[0], ignored)) {
      causes.push_back(InvalidCause(IndexPath(values_path, 0), r.values[0],
                                    "for 'Gt', 'Lt' operators, the value must be an integer"));
    }
  } else {
    causes.push_back(
        InvalidCause(ChildPath(path, "operator"), r.op, "not a valid selector operator"));
  }
  // metav1 validation.ValidateLabelName: one Invalid per IsQualifiedName message.
  for (const std::string& msg : IsQualifiedName(r.key)) {
    causes.push_back(InvalidCause(ChildPath(path, "key"), r.key, msg));
  }
  for (size_t i = 0; i < r.values.size(); ++i) {
    for (const std::string& msg : IsValidLabelValue(r.values[i])) {
      causes.push_back(InvalidCause(IndexPath(values_path, i), r.values[i], msg));
    }
  }
}

void ValidateField(const NodeSelectorRequirement& r, const std::string& path,
                   std::vector<Cause>& causes) {
  const std::string values_path = ChildPath(path, "values");
  if (r.op == kOpIn || r.op == kOpNotIn) {
    if (r.values.size() != 1) {
      causes.push_back(RequiredCause(
          values_path,
          "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"));
    }
  } else {
    causes.push_back(
        InvalidCause(ChildPath(path, "operator"), r.op, "not a valid selector operator"));
  }
  if (r.key != kFieldMetadataName) {
    causes.push_back(InvalidCause(ChildPath(path, "key"), r.key, "not a valid field selector key"));
    return;
  }
  for (size_t i = 0; i < r.values.size(); ++i) {
    for (const std::string& msg : IsDNS1123Subdomain(r.values[i])) {
      causes.push_back(InvalidCause(IndexPath(values_path, i), r.values[i], msg));
    }
  }
}

}  // namespace

std::vector<Cause> ValidateNodeSelectorTerm(const NodeSelectorTerm& term, const std::string& path) {
  std::vector<Cause> causes;
  const size_t total = term.match_expressions.size() + term.match_fields.size();
  if (total == 0) {
    // An empty term matches no node (core/v1 NodeSelectorTerm docs): as a request it can
    // only be a mistake.
    causes.push_back(RequiredCause(
        path, "must have at least one requirement in matchExpressions or matchFields"));
  } else if (total > kMaxRequirements) {
    causes.push_back(TooManyCause(path, total, kMaxRequirements));
  }
  const std::string expr_path = ChildPath(path, "matchExpressions");
  for (size_t i = 0; i < term.match_expressions.size(); ++i) {
    ValidateExpression(term.match_expressions[i], IndexPath(expr_path, i), causes);
  }
  const std::string fields_path = ChildPath(path, "matchFields");
  for (size_t i = 0; i < term.match_fields.size(); ++i) {
    ValidateField(term.match_fields[i], IndexPath(fields_path, i), causes);
  }
  return causes;
}

}  // namespace kmt::api
