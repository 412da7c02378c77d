#include "api/term_and.h"

#include <optional>
#include <string>

#include "base/json.h"
#include "base/json_patch.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;

constexpr const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
const std::string kAffinityPtr = "/spec/affinity";
const std::string kNodeAffinityPtr = kAffinityPtr + "/nodeAffinity";
const std::string kRequiredPtr = kNodeAffinityPtr + "/" + kRequired;
const std::string kTermsPtr = kRequiredPtr + "/nodeSelectorTerms";

bool ListHas(const std::vector<NodeSelectorRequirement>& list, const NodeSelectorRequirement& r) {
  for (const auto& o : list) {
    if (SameRequirement(o, r)) return true;
  }
  return false;
}

// `reqs` without duplicates (a term may list the same requirement twice; add it once).
std::vector<NodeSelectorRequirement> Unique(const std::vector<NodeSelectorRequirement>& reqs) {
  std::vector<NodeSelectorRequirement> out;
  for (const auto& r : reqs) {
    if (!ListHas(out, r)) out.push_back(r);
  }
  return out;
}

// Appends to `changes` what makes the pod term at `term_ptr` contain `wanted` in its list
// `member`. False when the existing member has a shape no valid pod has.
bool AppendMissing(const json& pod_term, const std::string& term_ptr, std::string_view member,
                   const std::vector<NodeSelectorRequirement>& wanted, base::JsonPatch& changes) {
  const json* list = base::Member(pod_term, member);
  if (list != nullptr && !list->is_array()) return false;
  std::vector<NodeSelectorRequirement> existing;
  if (list != nullptr) {
    for (const json& r : *list) existing.push_back(RequirementFromJsonLenient(r));
  }
  json missing = json::array();
  for (const auto& r : wanted) {
    if (!ListHas(existing, r)) missing.push_back(ToJson(r));
  }
  if (missing.empty()) return true;
  const std::string list_ptr = term_ptr + "/" + std::string(member);
  if (list == nullptr) {
    changes.Add(list_ptr, std::move(missing));
  } else {
    for (json& r : missing) changes.Add(list_ptr + "/-", std::move(r));
  }
  return true;
}

// The affinity part: test ops go to `tests`, changes to `changes`. False on a malformed pod.
bool AndAffinity(const json& pod, const json& spec, const NodeSelectorTerm& term,
                 base::JsonPatch& tests, base::JsonPatch& changes) {
  const NodeSelectorTerm unique{Unique(term.match_expressions), Unique(term.match_fields)};
  const json required_value = {{"nodeSelectorTerms", json::array({ToJson(unique)})}};

  const json* affinity = base::Member(spec, "affinity");
  if (affinity == nullptr) {
    // No JSON Patch op tests for absence; a concurrent writer would bump resourceVersion.
    if (const json* meta = base::Member(pod, "metadata")) {
      if (const json* rv = base::Member(*meta, "resourceVersion");
          rv != nullptr && rv->is_string()) {
        tests.Test("/metadata/resourceVersion", *rv);
      }
    }
    changes.Add(kAffinityPtr, {{"nodeAffinity", {{kRequired, required_value}}}});
    return true;
  }
  if (!affinity->is_object()) return false;

  const json* node_affinity = base::Member(*affinity, "nodeAffinity");
  if (node_affinity == nullptr) {
    tests.Test(kAffinityPtr, *affinity);
    changes.Add(kNodeAffinityPtr, {{kRequired, required_value}});
    return true;
  }
  if (!node_affinity->is_object()) return false;

  const json* required = base::Member(*node_affinity, kRequired);
  if (required == nullptr) {
    tests.Test(kNodeAffinityPtr, *node_affinity);
    changes.Add(kRequiredPtr, required_value);
    return true;
  }
  if (!required->is_object()) return false;

  const json* terms = base::Member(*required, "nodeSelectorTerms");
  if (terms != nullptr && !terms->is_array()) return false;
  if (terms == nullptr || terms->empty()) {
    tests.Test(kRequiredPtr, *required);
    if (terms == nullptr) {
      changes.Add(kTermsPtr, required_value["nodeSelectorTerms"]);
    } else {
      changes.Replace(kTermsPtr, required_value["nodeSelectorTerms"]);
    }
    return true;
  }

  const size_t before = changes.size();
  for (size_t i = 0; i < terms->size(); ++i) {
    const json& pod_term = (*terms)[i];
    if (!pod_term.is_object()) return false;
    // A term without requirements matches no node; appending to it would turn it into the
    // added term alone and widen the OR. Left as it is, it keeps matching nothing.
    if (TermFromJsonLenient(pod_term).empty()) continue;
    const std::string term_ptr = kTermsPtr + "/" + std::to_string(i);
    if (!AppendMissing(pod_term, term_ptr, "matchExpressions", unique.match_expressions, changes) ||
        !AppendMissing(pod_term, term_ptr, "matchFields", unique.match_fields, changes)) {
      return false;
    }
  }
  if (changes.size() != before) tests.Test(kRequiredPtr, *required);
  return true;
}

}  // namespace

std::vector<json> AndTermIntoPod(const json& pod, const NodeSelectorTerm& term,
                                 std::string_view gate) {
  try {
    const json* spec = base::Member(pod, "spec");
    if (spec == nullptr || !spec->is_object() || term.empty()) return {};

    base::JsonPatch tests;
    if (const json* meta = base::Member(pod, "metadata")) {
      if (const json* uid = base::Member(*meta, "uid"); uid != nullptr && uid->is_string()) {
        tests.Test("/metadata/uid", *uid);
      }
    }

    base::JsonPatch changes;
    if (!AndAffinity(pod, *spec, term, tests, changes)) return {};

    // Remove the gate by index, highest index first so earlier indices stay valid.
    if (const json* gates = base::Member(*spec, "schedulingGates")) {
      if (!gates->is_array()) return {};
      std::vector<size_t> hits;  // descending, so earlier indices stay valid
      for (size_t i = gates->size(); i-- > 0;) {
        const json* name = base::Member((*gates)[i], "name");
        if (name != nullptr && name->is_string() && name->get_ref<const std::string&>() == gate) {
          hits.push_back(i);
        }
      }
      if (!hits.empty()) {
        tests.Test("/spec/schedulingGates", *gates);
        for (size_t i : hits) {
          changes.Remove("/spec/schedulingGates/" + std::to_string(i));
        }
      }
    }

    if (changes.empty()) return {};
    tests.Append(std::move(changes));
    return std::move(tests).TakeOps();
  } catch (const json::exception&) {
    return {};  // Unreachable with the checks above; never let it escape.
  }
}

bool SelectorCarriesTerm(const NodeSelector& required, const NodeSelectorTerm& term) {
  if (required.terms.empty()) return false;
  for (const auto& t : required.terms) {
    if (t.empty()) continue;  // matches no node, so it lets the pod nowhere
    for (const auto& r : term.match_expressions) {
      if (!ListHas(t.match_expressions, r)) return false;
    }
    for (const auto& r : term.match_fields) {
      if (!ListHas(t.match_fields, r)) return false;
    }
  }
  return true;
}

bool PodCarriesTerm(const json& pod, const NodeSelectorTerm& term) {
  const json* spec = base::Member(pod, "spec");
  const json* affinity = spec ? base::Member(*spec, "affinity") : nullptr;
  const json* node_affinity = affinity ? base::Member(*affinity, "nodeAffinity") : nullptr;
  const json* required = node_affinity ? base::Member(*node_affinity, kRequired) : nullptr;
  if (required == nullptr) return false;
  // A shape no valid pod has is not trusted to carry anything (the lenient reader below
  // would see an empty term in it).
  const json* terms = base::Member(*required, "nodeSelectorTerms");
  if (terms == nullptr || !terms->is_array()) return false;
  for (const json& t : *terms) {
    if (!t.is_object()) return false;
    for (const char* member : {"matchExpressions", "matchFields"}) {
      const json* list = base::Member(t, member);
      if (list != nullptr && !list->is_array()) return false;
    }
  }
  return SelectorCarriesTerm(NodeSelectorFromJsonLenient(*required), term);
}

json AffinityTheAndReads(const json& affinity) {
  // AndAffinity's steps: a member that is null reads as absent (base::Member).
  if (!affinity.is_object()) return affinity;
  const json* node_affinity = base::Member(affinity, "nodeAffinity");
  if (node_affinity == nullptr) return affinity;
  if (!node_affinity->is_object()) return {{"nodeAffinity", *node_affinity}};
  const json* required = base::Member(*node_affinity, kRequired);
  if (required == nullptr) return {{"nodeAffinity", *node_affinity}};
  return {{"nodeAffinity", {{kRequired, *required}}}};
}

bool PodHasGate(const json& pod, std::string_view gate) {
  const json* spec = base::Member(pod, "spec");
  const json* gates = spec ? base::Member(*spec, "schedulingGates") : nullptr;
  if (gates == nullptr || !gates->is_array()) return false;
  for (const json& g : *gates) {
    const json* name = base::Member(g, "name");
    if (name != nullptr && name->is_string() && name->get_ref<const std::string&>() == gate) {
      return true;
    }
  }
  return false;
}

std::optional<NodeSelector> WithoutTerm(const std::optional<NodeSelector>& merged,
                                        const NodeSelectorTerm& term) {
  if (!merged) return merged;
  NodeSelector own = *merged;
  bool all_empty = true;
  for (auto& t : own.terms) {
    std::erase_if(t.match_expressions, [&](const NodeSelectorRequirement& r) {
      return ListHas(term.match_expressions, r);
    });
    std::erase_if(t.match_fields,
                  [&](const NodeSelectorRequirement& r) { return ListHas(term.match_fields, r); });
    if (!t.empty()) all_empty = false;
  }
  // Every term emptied: the pod had no required affinity and the AND created it.
  if (all_empty) return std::nullopt;
  return own;
}

}  // namespace kmt::api
