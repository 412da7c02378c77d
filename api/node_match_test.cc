#include "api/node_match.h"

#include <catch2/catch.hpp>
#include <string>

namespace kmt::api {
namespace {

const NodeLabels kNode{
    {"topology.kubernetes.io/zone", "a"}, {"cpu-count", "16"}, {"gpu", "true"}, {"weird", "12x"}};

// Label requirements: the one table, api/label_requirement_test.cc (through these functions
// too).

// nodeaffinity's semantics (hack/differential.sh compares with it on generated cases).
TEST_CASE("Field requirement matching: the node's only field is metadata.name") {
  auto [r, node, want] = GENERATE(table<NodeSelectorRequirement, std::string, bool>({
      {{"metadata.name", "In", {"node-1"}}, "node-1", true},
      {{"metadata.name", "In", {"node-2"}}, "node-1", false},
      {{"metadata.name", "NotIn", {"node-2"}}, "node-1", true},
      {{"metadata.name", "NotIn", {"node-1"}}, "node-1", false},
      {{"metadata.name", "In", {"node-1", "node-2"}}, "node-1", false},  // one value only
      {{"metadata.name", "NotIn", {}}, "node-1", false},
      {{"metadata.name", "Exists", {}}, "node-1", false},
      {{"metadata.name", "in", {"node-1"}}, "node-1", false},
      // Any other key reads as "" (fields.Set.Get): found by the differential tier, where
      // the project said "no match" for every other key.
      {{"metadata.uid", "In", {"node-1"}}, "node-1", false},
      {{"metadata.uid", "NotIn", {"node-1"}}, "node-1", true},
      {{"spec.unschedulable", "In", {""}}, "node-1", true},
      {{"metadata.name ", "NotIn", {"node-1"}}, "node-1", true},
      // A node without a name has no fields: matchFields are not checked, but a
      // malformed one still fails the term.
      {{"metadata.name", "In", {"node-1"}}, "", true},
      {{"metadata.name", "NotIn", {""}}, "", true},
      {{"metadata.name", "In", {"a", "b"}}, "", false},
      {{"metadata.name", "Gt", {"1"}}, "", false},
  }));
  CAPTURE(ToString(r), node);
  CHECK(FieldRequirementMatchesNode(r, node) == want);
}

TEST_CASE("Terms AND their requirements; selectors OR their terms") {
  const NodeSelectorRequirement zone_a{"topology.kubernetes.io/zone", "In", {"a"}};
  const NodeSelectorRequirement zone_b{"topology.kubernetes.io/zone", "In", {"b"}};
  const NodeSelectorRequirement me{"metadata.name", "In", {"node-1"}};
  const NodeSelectorRequirement other{"metadata.name", "In", {"node-2"}};
  auto [sel, want] = GENERATE_COPY(table<NodeSelector, bool>({
      {NodeSelector{}, false},                      // no terms: nothing
      {NodeSelector{{NodeSelectorTerm{}}}, false},  // empty term: nothing
      {NodeSelector{{{{zone_a}, {}}}}, true},
      {NodeSelector{{{{zone_a}, {me}}}}, true},
      {NodeSelector{{{{zone_a}, {other}}}}, false},
      {NodeSelector{{{{zone_a, zone_b}, {}}}}, false},
      {NodeSelector{{{{zone_b}, {}}, {{zone_a}, {}}}}, true},
      {NodeSelector{{NodeSelectorTerm{}, {{}, {me}}}}, true},
      {NodeSelector{{{{zone_b}, {}}, {{}, {other}}}}, false},
  }));
  CAPTURE(ToJson(sel).dump());
  CHECK(SelectorMatchesNode(sel, kNode, "node-1") == want);
  if (sel.terms.size() == 1) CHECK(TermMatchesNode(sel.terms[0], kNode, "node-1") == want);
}

}  // namespace
}  // namespace kmt::api
