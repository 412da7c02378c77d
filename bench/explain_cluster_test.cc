// The explainer benchmark's data and rows: the data must exercise every hot-path reason
// (else the benchmark would measure an easy case), and the rows must judge the budget.
#include "bench/explain_cluster.h"

#include <catch2/catch.hpp>

namespace kmt::bench {
namespace {

using api::Bit;
using api::ReasonKind;

TEST_CASE("The benchmark cluster exercises the explainer's reasons") {
  ExplainCluster c(30, 2);
  REQUIRE(c.nodes.size() == 30);
  REQUIRE(c.bound.size() == 60);
  CHECK(CountSchedulable(c.nodes) == 30);
  const api::Explainer e(c.pod, &c.term, c.source_node, c.nodes, c.bound);
  CHECK(EvaluateAll(e) ==
        (Bit(ReasonKind::kExcludedByAddedTerm) | Bit(ReasonKind::kCordoned) |
         Bit(ReasonKind::kNotReady) | Bit(ReasonKind::kTaintNotTolerated) |
         Bit(ReasonKind::kOwnAffinityExcludes) | Bit(ReasonKind::kAlreadyRunsThere)));
  // node-00002: zone-2, outside the term; node-00001: zone-1, fits.
  CHECK(e.Evaluate(2) == Bit(ReasonKind::kExcludedByAddedTerm));
  CHECK(e.Evaluate(1) == 0);
  // node-00007: the source node, also tainted dedicated=gpu:NoSchedule.
  CHECK(e.Evaluate(7) ==
        (Bit(ReasonKind::kAlreadyRunsThere) | Bit(ReasonKind::kTaintNotTolerated)));
}

TEST_CASE("ExplainerRows judges the 1,000,000/s budget") {
  auto [rate, pass] = GENERATE(table<double, bool>({{2.5e6, true}, {1e6, true}, {9.9e5, false}}));
  CAPTURE(rate);
  std::vector<Row> rows = ExplainerRows(rate, 5e7);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].pass == pass);
  CHECK(rows[0].floor == "50.0 M/s");
  CHECK(rows[0].budget == "≥ 1.00 M/s");
  CHECK(ExplainerRows(2.5e6, 5e7)[0].ratio == "20.00×");
}

}  // namespace
}  // namespace kmt::bench
