// The one table of label-requirement matching (api/label_requirement_table.h), through the
// matcher itself and through every caller of it in api/.
#include "api/label_requirement.h"

#include <catch2/catch.hpp>

#include "api/explain.h"
#include "api/label_requirement_table.h"
#include "api/node_match.h"

namespace kmt::api {
namespace {

using testing::RequirementRow;
using testing::RequirementTable;

Labels ObjectLabels(const RequirementRow& row) {
  if (!row.label) return Labels{{"other", "x"}};
  return Labels{{"other", "x"}, {row.key, *row.label}};
}

TEST_CASE("Label requirements: the table, through LabelRequirement") {
  for (const RequirementRow& row : RequirementTable()) {
    CAPTURE(row.why);
    const LabelRequirement r(row.key, row.op, row.values);
    CHECK(r.Matches(row.label ? &*row.label : nullptr) == row.match);
  }
}

TEST_CASE("Label requirements: the table, through node selector terms") {
  for (const RequirementRow& row : RequirementTable()) {
    const auto op = testing::NodeSelectorOpText(row.op);
    if (!op) continue;  // = and != are label selector strings only
    CAPTURE(row.why);
    const NodeSelectorRequirement r{row.key, *op, row.values};
    const Labels labels = ObjectLabels(row);
    CHECK(RequirementMatchesLabels(r, labels) == row.match);
    CHECK(TermMatchesNode(NodeSelectorTerm{{r}, {}}, labels, "node-1") == row.match);
  }
}

TEST_CASE("Label requirements: the table, through the explainer (interned ids)") {
  const TargetPod pod;
  for (const RequirementRow& row : RequirementTable()) {
    const auto op = testing::NodeSelectorOpText(row.op);
    if (!op) continue;
    CAPTURE(row.why);
    const NodeSelectorTerm term{{{row.key, *op, row.values}}, {}};
    NodeInfo node;
    node.name = "node-1";
    node.labels = ObjectLabels(row);
    const std::vector<NodeInfo> nodes{node};
    const Explainer e(pod, &term, "", nodes, {});
    CHECK(e.Explain(0).allowed_by_term == row.match);
    CHECK(((e.Evaluate(0) & Bit(ReasonKind::kExcludedByAddedTerm)) == 0) == row.match);
  }
}

TEST_CASE("ParseInt64 is strconv.ParseInt(s, 10, 64)") {
  struct Row {
    const char* text;
    bool ok;
    int64_t value;
  };
  const Row row = GENERATE(values<Row>({
      {"0", true, 0},
      {"-0", true, 0},
      {"+0", true, 0},
      {"+5", true, 5},
      {"-5", true, -5},
      {"007", true, 7},
      {"9223372036854775807", true, INT64_MAX},
      {"-9223372036854775808", true, INT64_MIN},
      {"9223372036854775808", false, 0},
      {"-9223372036854775809", false, 0},
      {"", false, 0},
      {"+", false, 0},
      {"-", false, 0},
      {"+-5", false, 0},
      {"-+5", false, 0},
      {"--5", false, 0},
      {"++5", false, 0},
      {" 5", false, 0},
      {"5 ", false, 0},
      {"0x10", false, 0},
      {"1_000", false, 0},
      {"1e3", false, 0},
      {"5.0", false, 0},
  }));
  CAPTURE(row.text);
  int64_t v = 42;
  CHECK(ParseInt64(row.text, v) == row.ok);
  if (row.ok) CHECK(v == row.value);
  if (!row.ok) CHECK(v == 42);  // untouched on failure
}

}  // namespace
}  // namespace kmt::api
