// kube/selector.h — label and field selectors as the API server understands
// them, parsed once and matched against objects. The fake client filters with
// these; informers use them to check what a server-side selector promised.
//
// Label selector grammar (k8s.io/apimachinery/pkg/labels/selector.go):
//   req,req,...   where req is one of
//   key | !key | key=v | key==v | key!=v | key in (v1,v2) | key notin (v1,v2) | key>N | key<N
// `!=` and `notin` also match objects that lack the key; `in` requires it.
// Field selector grammar: key=v | key==v | key!=v, comma separated, all ANDed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kmt::kube {

struct LabelRequirement {
  enum class Op { kExists, kDoesNotExist, kEquals, kNotEquals, kIn, kNotIn, kGt, kLt };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;  // one for =, !=, >, <; one or more for in/notin
};

// Requirement.Matches (api/label_requirement.h, the project's one matcher) against an
// object's metadata.labels (an object of strings, or null).
bool RequirementMatches(const LabelRequirement& r, const nlohmann::json& labels);

class LabelSelector {
 public:
  // Throws std::invalid_argument with a message naming the selector and the
  // problem (e.g. `label selector "a in (x": missing ')'`).
  static LabelSelector Parse(std::string_view text);

  // labels: the object's metadata.labels (an object of strings) or null.
  bool Matches(const nlohmann::json& labels) const;
  bool Empty() const { return requirements_.empty(); }
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }

 private:
  std::vector<LabelRequirement> requirements_;
};

struct FieldRequirement {
  std::string field;  // dotted path, e.g. "spec.nodeName"
  bool negate = false;
  std::string value;
};

class FieldSelector {
 public:
  // Throws std::invalid_argument on a malformed selector.
  static FieldSelector Parse(std::string_view text);

  // A missing field compares as the empty string, as the API server does for
  // e.g. an unbound pod's spec.nodeName.
  bool Matches(const nlohmann::json& object) const;
  bool Empty() const { return requirements_.empty(); }
  const std::vector<FieldRequirement>& requirements() const { return requirements_; }

 private:
  std::vector<FieldRequirement> requirements_;
};

// The string value of a dotted path ("metadata.name"); "" when absent; numbers
// and booleans in their JSON text form ("true").
std::string FieldValue(const nlohmann::json& object, std::string_view path);

// Kubernetes label key / value syntax (qualified name; value ≤ 63 chars), as
// api/label_validation.h judges them.
bool IsValidLabelKey(std::string_view key);
bool IsValidLabelValue(std::string_view value);

}  // namespace kmt::kube
