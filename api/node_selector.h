// api/node_selector.h — core/v1 NodeSelector, NodeSelectorTerm, NodeSelectorRequirement:
// the model, JSON out, and a strict JSON parser for untrusted input.
//
// Strict parsing (the added term comes from a user's annotation) rejects unknown members
// and wrong types with a cause naming the JSON path. Validation of the *values* (operators,
// label keys, counts) is separate: api/validation.h. No function here lets a nlohmann
// exception escape.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/cause.h"

namespace kmt::api {

// core/v1 NodeSelectorOperator values.
inline constexpr std::string_view kOpIn = "In";
inline constexpr std::string_view kOpNotIn = "NotIn";
inline constexpr std::string_view kOpExists = "Exists";
inline constexpr std::string_view kOpDoesNotExist = "DoesNotExist";
inline constexpr std::string_view kOpGt = "Gt";
inline constexpr std::string_view kOpLt = "Lt";

// The only field a matchFields requirement may name (core/v1 validation).
inline constexpr std::string_view kFieldMetadataName = "metadata.name";

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // JSON "operator"
  std::vector<std::string> values;

  bool operator==(const NodeSelectorRequirement&) const = default;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;

  bool operator==(const NodeSelectorTerm&) const = default;
  bool empty() const { return match_expressions.empty() && match_fields.empty(); }
};

// Terms are ORed; requirements inside a term are ANDed.
struct NodeSelector {
  std::vector<NodeSelectorTerm> terms;

  bool operator==(const NodeSelector&) const = default;
};

// JSON in core/v1 shape. Empty lists are omitted ("values" of Exists, an unused
// "matchFields"), as Go's omitempty would.
nlohmann::json ToJson(const NodeSelectorRequirement& r);
nlohmann::json ToJson(const NodeSelectorTerm& t);
nlohmann::json ToJson(const NodeSelector& s);  // {"nodeSelectorTerms": [...]}

// Human text for messages: `zone In [a, b]`, `gpu Exists`, `metadata.name In [node-1]`;
// a term joins its requirements with ", ".
std::string ToString(const NodeSelectorRequirement& r);
std::string ToString(const NodeSelectorTerm& t);

// Two requirements say the same thing: same key and operator, same values as a set.
bool SameRequirement(const NodeSelectorRequirement& a, const NodeSelectorRequirement& b);

struct TermParse {
  std::optional<NodeSelectorTerm> term;  // set iff causes is empty
  std::vector<Cause> causes;
};

// Strict parse of a NodeSelectorTerm JSON object. `path` prefixes every cause's field
// (empty: fields start at "matchExpressions..."). Unknown members → FieldValueNotSupported
// naming the member; wrong JSON types → FieldValueTypeInvalid. null values count as
// absent (as Go's decoder treats them).
TermParse ParseNodeSelectorTerm(const nlohmann::json& j, const std::string& path);

// Lenient reads for objects the API server already validated (a pod's own affinity):
// never throw, skip what has the wrong shape.
NodeSelectorRequirement RequirementFromJsonLenient(const nlohmann::json& j);
NodeSelectorTerm TermFromJsonLenient(const nlohmann::json& j);
NodeSelector NodeSelectorFromJsonLenient(const nlohmann::json& j);  // {"nodeSelectorTerms": ...}

}  // namespace kmt::api
