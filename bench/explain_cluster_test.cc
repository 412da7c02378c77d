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

TEST_CASE("The drain benchmark's VMs all leave, and the floor agrees when nothing fills up") {
  ExplainCluster c(30, 2);
  api::MigrationTargetPolicy policy;
  policy.name = "zones";
  policy.term = c.term;
  const std::vector<api::DrainVm> vms = DrainVms(c, 10, &policy);
  REQUIRE(vms.size() == 10);
  CHECK(vms[0].name == "vm-1000");
  CHECK(vms[9].pod->name == "virt-launcher-vm-1009-target");
  const api::DrainPlan plan =
      api::PlanDrain({.node = c.source_node, .nodes = c.nodes, .bound = c.bound}, vms);
  CHECK(plan.leaving == 10);
  CHECK(ExplainEachAlone(c, vms) == 10);
  // Only nodes the zone term allows take them.
  for (const api::VmPlan& v : plan.vms) {
    CAPTURE(v.placed_on);
    CHECK_FALSE(v.placed_on.empty());
    CHECK(v.placed_on != c.source_node);
  }
}

TEST_CASE("DrainPlanRow: plan time against the floor's, no budget") {
  const Row row = DrainPlanRow(100, 0.5, 0.25);
  CHECK(row.figure == "drain plan of 100 VMs (PlanDrain, capacity accounted)");
  CHECK(row.value == "500 ms");
  CHECK(row.floor == "250 ms");
  CHECK(row.ratio == "2.00×");
  CHECK(row.budget.empty());
  CHECK_FALSE(row.pass.has_value());
}

}  // namespace
}  // namespace kmt::bench
