// api/compiled_selector.h — label selectors and pod (anti-)affinity terms resolved to interned
// ids once, for the explainer's per-node and per-pod loops (api/explain.h, api/pod_rules.h).
//
// A text nobody interned is on no object, so it resolves to kNoIntern and matches no label.
// The compiled forms keep views of the requirements they were built from: those must
// outlive them. Matching follows k8s.io/apimachinery/pkg/labels (api/label_requirement.h):
//   - CompiledSelector: a metav1.LabelSelector, matchLabels and matchExpressions ANDed
//     (In / NotIn / Exists / DoesNotExist; any other operator: matches nothing); `null`
//     (LabelSelectorAsSelector(nil) = labels.Nothing()) matches nothing; the empty
//     selector matches everything.
//   - CompiledPodTerm: framework.AffinityTerm.Matches — the pod's namespace is one of the
//     term's namespaces (both namespace fields empty: the namespace of the pod holding the
//     term) or its namespaceSelector matches that namespace's labels, and the label
//     selector matches the pod's labels.
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/label_requirement.h"
#include "api/labels.h"
#include "api/node_selector.h"
#include "api/projections.h"

namespace kmt::api {

struct CompiledExpr {
  LabelRequirement requirement;
  InternId key = kNoIntern;
  std::vector<InternId> values;

  explicit CompiledExpr(const NodeSelectorRequirement& r)
      : requirement(r.key, NodeSelectorOp(r.op), r.values), key(FindInternId(r.key)) {
    for (const auto& v : r.values) values.push_back(FindInternId(v));
  }

  bool Matches(const Labels& labels) const {
    const InternId v = labels.FindId(key);
    return requirement.Matches(
        v != kNoIntern, [&] { return std::ranges::find(values, v) != values.end(); },
        [&]() -> std::string_view { return InternText(v); });
  }
};

struct CompiledSelector {
  std::vector<std::pair<InternId, InternId>> match_labels;
  std::vector<CompiledExpr> exprs;
  bool valid = true;  // false: null, or an operator a label selector does not have

  CompiledSelector(const LabelSelector& sel, bool null) : valid(!null) {
    for (const auto& [k, v] : sel.match_labels.Sorted())
      match_labels.emplace_back(FindInternId(k), FindInternId(v));
    for (const auto& r : sel.match_expressions) {
      exprs.emplace_back(r);
      valid = valid &&
              (r.op == kOpIn || r.op == kOpNotIn || r.op == kOpExists || r.op == kOpDoesNotExist);
    }
  }
  // Whether the match against bound pod `b` may differ from one against its real labels:
  // the cache left some of them out (BoundPod::labels_dropped) and a requirement names a
  // key among those it lacks.
  bool MayMissLabels(const BoundPod& b) const {
    if (b.labels_dropped == 0 || !valid) return false;
    for (const auto& [k, v] : match_labels) {
      if (b.labels.FindId(k) == kNoIntern) return true;
    }
    for (const auto& e : exprs) {
      if (b.labels.FindId(e.key) == kNoIntern) return true;
    }
    return false;
  }
  // labels.Selector.Empty(): no requirement at all (null is not empty: it matches nothing).
  bool Empty() const { return valid && match_labels.empty() && exprs.empty(); }
  bool Matches(const Labels& labels) const {
    if (!valid) return false;
    for (const auto& [k, v] : match_labels) {
      if (v == kNoIntern || labels.FindId(k) != v) return false;
    }
    for (const auto& e : exprs) {
      if (!e.Matches(labels)) return false;
    }
    return true;
  }
};

// Namespace labels by name, from the caller's NamespaceInfo list.
class NamespaceIndex {
 public:
  explicit NamespaceIndex(std::span<const NamespaceInfo> namespaces) {
    for (const auto& n : namespaces) by_name_.emplace(n.name, &n.labels);
  }
  // nullptr when the namespace is not known.
  const Labels* Find(std::string_view ns) const {
    auto it = by_name_.find(ns);
    return it == by_name_.end() ? nullptr : it->second;
  }

 private:
  std::unordered_map<std::string_view, const Labels*> by_name_;
};

struct CompiledPodTerm {
  const PodAffinityTerm* term;
  std::string_view owner_ns;  // namespace of the pod holding the term
  CompiledSelector selector;
  std::optional<CompiledSelector> ns_selector;
  InternedString topology;  // holds the topology key's id
  InternId topology_key;

  CompiledPodTerm(const PodAffinityTerm& t, std::string_view owner)
      : term(&t),
        owner_ns(owner),
        selector(t.selector, t.selector_null),
        topology(t.topology_key),
        topology_key(topology.id()) {
    if (t.namespace_selector) ns_selector.emplace(*t.namespace_selector, false);
  }

  // `ns_labels`: the labels of namespace `ns`, nullptr when unknown. An unknown namespace
  // is matched by an empty namespaceSelector only (the scheduler lists the namespaces a
  // pod's own selector picks), unless `unknown_as_unlabelled` (the scheduler reads the
  // incoming pod's namespace labels for existing pods' terms, and takes none when the
  // namespace is not found).
  bool MatchesNamespace(std::string_view ns, const Labels* ns_labels,
                        bool unknown_as_unlabelled = false) const {
    const auto& list = term->namespaces;
    if (list.empty() && !ns_selector) return ns == owner_ns;
    if (std::ranges::find(list, ns) != list.end()) return true;
    if (!ns_selector) return false;
    if (ns_labels != nullptr) return ns_selector->Matches(*ns_labels);
    return ns_selector->Empty() || (unknown_as_unlabelled && ns_selector->Matches(Labels()));
  }
  bool Matches(std::string_view ns, const Labels& labels, const Labels* ns_labels,
               bool unknown_as_unlabelled = false) const {
    return MatchesNamespace(ns, ns_labels, unknown_as_unlabelled) && selector.Matches(labels);
  }
  // CompiledSelector::MayMissLabels, for a pod of a namespace the term selects.
  bool MayMissLabels(const BoundPod& b, const Labels* ns_labels) const {
    return selector.MayMissLabels(b) && MatchesNamespace(b.ns, ns_labels);
  }
};

// "app=db, tier In [a, b]" (matchLabels sorted, then matchExpressions); "{}" when empty,
// "null" when null.
std::string SelectorText(const LabelSelector& sel, bool null);

}  // namespace kmt::api
