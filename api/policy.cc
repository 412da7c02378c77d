#include "api/policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "api/added_term.h"
#include "api/label_requirement.h"
#include "api/label_validation.h"
#include "api/names.h"
#include "base/json.h"

namespace kmt::api {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kTermPath = "spec.addedNodeSelectorTerm";

// The JSON type name the API server's decoder names in a type error.
std::string_view TypeName(const Json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "null";
}

Cause WrongType(const std::string& path, const Json& v, std::string_view want) {
  return TypeInvalidCause(
      path, v.dump(),
      std::string("must be of type ") + std::string(want) + ", not " + std::string(TypeName(v)));
}

void CheckKey(const std::string& path, const std::string& key, std::vector<Cause>& causes) {
  for (const std::string& msg : IsQualifiedName(key)) {
    causes.push_back(InvalidCause(path, key, msg));
  }
}

void CheckValue(const std::string& path, const std::string& value, std::vector<Cause>& causes) {
  for (const std::string& msg : IsValidLabelValue(value)) {
    causes.push_back(InvalidCause(path, value, msg));
  }
}

// metav1validation.ValidateLabelSelector.
std::optional<PolicyLabelSelector> ParseSelector(const Json& v, const std::string& path,
                                                 std::vector<Cause>& causes) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) {
    causes.push_back(WrongType(path, v, "object"));
    return std::nullopt;
  }
  PolicyLabelSelector sel;
  if (const Json* it = base::Member(v, "matchLabels")) {
    const std::string mpath = ChildPath(path, "matchLabels");
    if (!it->is_object()) {
      causes.push_back(WrongType(mpath, *it, "object"));
    } else {
      for (const auto& [k, val] : it->items()) {
        CheckKey(mpath, k, causes);
        if (!val.is_string()) {
          causes.push_back(WrongType(KeyPath(mpath, k), val, "string"));
          continue;
        }
        CheckValue(KeyPath(mpath, k), val.get<std::string>(), causes);
        sel.requirements.push_back({k, "In", {val.get<std::string>()}});
      }
    }
  }
  if (const Json* it = base::Member(v, "matchExpressions")) {
    const std::string epath = ChildPath(path, "matchExpressions");
    if (!it->is_array()) {
      causes.push_back(WrongType(epath, *it, "array"));
    } else {
      for (size_t i = 0; i < it->size(); ++i) {
        const Json& e = (*it)[i];
        const std::string ipath = IndexPath(epath, i);
        if (!e.is_object()) {
          causes.push_back(WrongType(ipath, e, "object"));
          continue;
        }
        PolicyLabelSelector::Requirement r;
        const Json& key = base::At(e, "key");
        if (!key.is_string() || key.get<std::string>().empty()) {
          causes.push_back(RequiredCause(ChildPath(ipath, "key"), ""));
        } else {
          r.key = key.get<std::string>();
          CheckKey(ChildPath(ipath, "key"), r.key, causes);
        }
        r.op = base::StringAt(e, "operator");
        const Json& values = base::At(e, "values");  // absent and null: no values
        if (!values.is_array() && !values.is_null()) {
          causes.push_back(WrongType(ChildPath(ipath, "values"), values, "array"));
          continue;
        }
        if (values.is_array()) {
          for (size_t j = 0; j < values.size(); ++j) {
            const std::string vpath = IndexPath(ChildPath(ipath, "values"), j);
            if (!values[j].is_string()) {
              causes.push_back(WrongType(vpath, values[j], "string"));
              continue;
            }
            r.values.push_back(values[j].get<std::string>());
            CheckValue(vpath, r.values.back(), causes);
          }
        }
        if (r.op == "In" || r.op == "NotIn") {
          if (r.values.empty()) {
            causes.push_back(RequiredCause(ChildPath(ipath, "values"),
                                           "must be specified when `operator` is 'In' or 'NotIn'"));
          }
        } else if (r.op == "Exists" || r.op == "DoesNotExist") {
          if (!r.values.empty()) {
            causes.push_back(ForbiddenCause(
                ChildPath(ipath, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
          }
        } else {
          causes.push_back(NotSupportedCause(ChildPath(ipath, "operator"), r.op,
                                             {"In", "NotIn", "Exists", "DoesNotExist"}));
        }
        sel.requirements.push_back(std::move(r));
      }
    }
  }
  return sel;
}

}  // namespace

bool PolicyLabelSelector::Matches(const Json& labels) const {
  for (const Requirement& r : requirements) {
    const std::string* value = nullptr;
    std::string holder;
    if (labels.is_object()) {
      if (auto v = base::String(labels, r.key)) {
        holder = *v;
        value = &holder;
      }
    }
    const LabelRequirement req(r.key, NodeSelectorOp(r.op), r.values);
    if (!req.Matches(value)) return false;
  }
  return true;
}

PolicyParse ParsePolicy(const Json& object) {
  PolicyParse out;
  std::vector<Cause>& causes = out.causes;
  MigrationTargetPolicy p;
  if (!object.is_object()) {
    causes.push_back(WrongType("", object, "object"));
    return out;
  }
  // metadata.name as stored; any other JSON there (not from the API server) reads as "".
  if (const Json& name = base::At(object, {"metadata", "name"}); name.is_string()) {
    p.name = name.get<std::string>();
  }
  const Json& spec = base::At(object, "spec");
  if (!spec.is_object()) {
    causes.push_back(spec.is_null() ? RequiredCause("spec", "")
                                    : WrongType("spec", spec, "object"));
    return out;
  }
  if (const Json* it = base::Member(spec, "priority")) {
    if (!it->is_number_integer()) {
      causes.push_back(WrongType("spec.priority", *it, "integer"));
    } else {
      p.priority = it->get<int64_t>();
    }
  }
  if (const Json* it = base::Member(spec, "maxInboundPerNode")) {
    if (!it->is_number_integer()) {
      causes.push_back(WrongType("spec.maxInboundPerNode", *it, "integer"));
    } else if (const int64_t n = it->get<int64_t>(); n < 1 || n > kMaxInboundLimit) {
      // field.Invalid with an integer value: printed unquoted, as ErrorBody prints an int64.
      causes.push_back({std::string(kCauseInvalid), "spec.maxInboundPerNode",
                        fmt::format("Invalid value: {}: must be between 1 and {}, inclusive", n,
                                    kMaxInboundLimit)});
    } else {
      p.max_inbound_per_node = n;
    }
  }
  const Json& match = base::At(spec, "match");
  if (!match.is_null() && !match.is_object()) {
    causes.push_back(WrongType("spec.match", match, "object"));
  } else if (match.is_object()) {
    // Absent means Any; any other JSON, null included, is shown as written.
    std::string o = "Any";
    if (const auto origin = base::Find(match, "origin")) {
      o = (*origin)->is_string() ? (*origin)->get<std::string>() : (*origin)->dump();
    } else if (origin.status() == base::Lookup::kNull) {
      o = "null";
    }
    if (o == "Any") {
      p.origin = PolicyOrigin::kAny;
    } else if (o == "Evacuation") {
      p.origin = PolicyOrigin::kEvacuation;
    } else if (o == "Descheduler") {
      p.origin = PolicyOrigin::kDescheduler;
    } else {
      causes.push_back(
          NotSupportedCause("spec.match.origin", o, {"Any", "Evacuation", "Descheduler"}));
    }
    p.source_node_selector = ParseSelector(base::At(match, "sourceNodeSelector"),
                                           "spec.match.sourceNodeSelector", causes);
    p.namespace_selector =
        ParseSelector(base::At(match, "namespaceSelector"), "spec.match.namespaceSelector", causes);
    p.vmi_selector =
        ParseSelector(base::At(match, "vmiSelector"), "spec.match.vmiSelector", causes);
  }
  const Json& term = base::At(spec, "addedNodeSelectorTerm");
  if (term.is_null()) {
    causes.push_back(RequiredCause(std::string(kTermPath), ""));
  } else {
    p.term_text = term.dump();
    AddedTermParse parsed = ParseAddedTerm(p.term_text);
    const std::string& annotation = AddedTermFieldPath();
    for (Cause c : parsed.causes) {
      if (c.field.starts_with(annotation)) {
        c.field = std::string(kTermPath) + c.field.substr(annotation.size());
      }
      causes.push_back(std::move(c));
    }
    if (parsed.term) p.term = std::move(*parsed.term);
  }
  if (causes.empty()) out.policy = std::move(p);
  return out;
}

std::optional<int64_t> ParseMaxInbound(const std::optional<std::string>& annotation) {
  if (!annotation) return std::nullopt;
  const std::string& s = *annotation;
  if (s.empty() || s.size() > 5 || s[0] == '0' ||
      !std::ranges::all_of(s, [](char c) { return c >= '0' && c <= '9'; })) {
    return 1;
  }
  const int64_t n = std::stoll(s);
  return n <= kMaxInboundLimit ? n : 1;
}

bool PolicyMatches(const MigrationTargetPolicy& p, const EvacuationFacts& facts) {
  if (p.origin == PolicyOrigin::kEvacuation && facts.descheduler) return false;
  if (p.origin == PolicyOrigin::kDescheduler && !facts.descheduler) return false;
  if (p.source_node_selector && !p.source_node_selector->Matches(facts.source_node_labels)) {
    return false;
  }
  if (p.namespace_selector && !p.namespace_selector->Matches(facts.namespace_labels)) {
    return false;
  }
  if (p.vmi_selector && !p.vmi_selector->Matches(facts.vmi_labels)) return false;
  return true;
}

EvacuationFacts EvacuationFactsOf(const Json& vmi, const Json& ns, const Json& source_node_labels) {
  EvacuationFacts facts;
  facts.vmi_labels = base::At(vmi, {"metadata", "labels"});
  const Json& annotations = base::At(vmi, {"metadata", "annotations"});
  facts.descheduler =
      base::StringAt(annotations, kAnnotationEvictionSource) == kEvictionSourceDescheduler;
  facts.namespace_labels = base::At(ns, {"metadata", "labels"});
  facts.source_node_labels = source_node_labels;
  return facts;
}

std::string SkippedPolicy::Warning() const {
  return "MigrationTargetPolicy \"" + name + "\" is skipped: " + cause;
}

PolicySet ParsePolicies(const std::vector<Json>& objects) {
  PolicySet set;
  for (const Json& obj : objects) {
    PolicyParse parsed = ParsePolicy(obj);
    if (!parsed.policy) {
      const Json& name = base::At(obj, {"metadata", "name"});
      set.skipped.push_back(
          {name.is_string() ? name.get<std::string>() : std::string(),
           parsed.causes.empty() ? std::string("invalid") : ToString(parsed.causes.front())});
      continue;
    }
    set.wants_namespace = set.wants_namespace || parsed.policy->namespace_selector.has_value();
    set.policies.push_back(std::move(*parsed.policy));
  }
  return set;
}

const MigrationTargetPolicy* SelectPolicy(const std::vector<MigrationTargetPolicy>& policies,
                                          const EvacuationFacts& facts) {
  const MigrationTargetPolicy* best = nullptr;
  for (const MigrationTargetPolicy& p : policies) {
    if (!PolicyMatches(p, facts)) continue;
    if (best == nullptr || p.priority > best->priority ||
        (p.priority == best->priority && p.name < best->name)) {
      best = &p;
    }
  }
  return best;
}

}  // namespace kmt::api
