// api/term_and.h — "The AND" (DESIGN.md §3), as RFC 6902 operations on a pod.
//
// The patch makes spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
// the AND of what the pod had and the term, and removes one scheduling gate, touching
// nothing else: the pod is never re-serialised through a struct.
//  - No affinity / nodeAffinity / required / zero terms → the missing parents are created
//    with `add` and required = {nodeSelectorTerms: [term]}.
//  - Otherwise the term's matchExpressions are appended (`…/matchExpressions/-`) to every
//    existing term, and its matchFields to every term's matchFields. Terms are ORed, so
//    adding a new term would widen; appending to each one narrows.
//  - A requirement a term already has (SameRequirement) is not added again.
//  - A term with no requirements matches no node (Kubernetes' nodeaffinity); it is left
//    empty, since appending to it would make it match the added term alone and widen.
//  - The gate is removed by index; other gates stay.
// The operations begin with `test`s guarding exactly what they rely on: metadata.uid, the
// current schedulingGates list (when a gate is removed), and the current value of the
// deepest existing object the affinity operations write into (the required node selector,
// nodeAffinity or affinity). When spec.affinity itself is absent there is no JSON Patch
// way to test for absence short of testing all of spec, so metadata.resourceVersion is
// tested instead. Applied to any other pod version, the patch fails.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "api/node_selector.h"

namespace kmt::api {

// The operations, in order (tests first). Empty when nothing needs to change (the pod
// already carries the term and does not have the gate), and also when the pod's JSON
// has a shape no valid pod has (e.g. spec.affinity is not an object) — callers tell the
// two apart with PodCarriesTerm(). Never throws on odd input.
std::vector<nlohmann::json> AndTermIntoPod(const nlohmann::json& pod, const NodeSelectorTerm& term,
                                           std::string_view gate);

// True when the pod's required node affinity has at least one term and every term with
// requirements already contains every requirement of `term` (so the pod can only land
// inside it).
bool PodCarriesTerm(const nlohmann::json& pod, const NodeSelectorTerm& term);
// The same over an already-projected required node selector.
bool SelectorCarriesTerm(const NodeSelector& required, const NodeSelectorTerm& term);

// The inverse of the AND on a projected required node selector: `merged` minus every
// requirement of `term` in each of its terms, which leaves the pod's own affinity (for a
// node the term allows, both match exactly the same nodes). When every term ends up empty
// the pod had no required affinity before the AND created one: nullopt.
std::optional<NodeSelector> WithoutTerm(const std::optional<NodeSelector>& merged,
                                        const NodeSelectorTerm& term);

// What AndTermIntoPod reads of a pod's spec.affinity, and nothing else: the required node
// selector when nodeAffinity has one (as {"nodeAffinity": {"required…": it}}), else nodeAffinity
// when there is one, else the whole affinity (tested whole then); pod (anti-)affinity and
// preferred terms are dropped whenever the AND does not test them. Any JSON, never throws: a
// pod whose spec.affinity is replaced by it yields the same operations.
nlohmann::json AffinityTheAndReads(const nlohmann::json& affinity);

// spec.schedulingGates contains a gate named `gate`.
bool PodHasGate(const nlohmann::json& pod, std::string_view gate);

}  // namespace kmt::api
