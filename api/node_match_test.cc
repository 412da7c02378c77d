#include "api/node_match.h"

#include <catch2/catch.hpp>

namespace kmt::api {
namespace {

const NodeLabels kNode{
    {"topology.kubernetes.io/zone", "a"}, {"cpu-count", "16"}, {"gpu", "true"}, {"weird", "12x"}};

// Label requirements: the one table, api/label_requirement_test.cc (through these functions
// too).

TEST_CASE("Field requirement matching: metadata.name only") {
  auto [r, want] = GENERATE(table<NodeSelectorRequirement, bool>({
      {{"metadata.name", "In", {"node-1"}}, true},
      {{"metadata.name", "In", {"node-2"}}, false},
      {{"metadata.name", "NotIn", {"node-2"}}, true},
      {{"metadata.name", "NotIn", {"node-1"}}, false},
      {{"metadata.name", "In", {"node-1", "node-2"}}, false},  // one value only
      {{"metadata.name", "Exists", {}}, false},
      {{"metadata.uid", "In", {"node-1"}}, false},
  }));
  CAPTURE(ToString(r));
  CHECK(FieldRequirementMatchesNode(r, "node-1") == want);
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
