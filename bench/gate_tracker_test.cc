// The gate release benchmark's bookkeeping: what counts as released, latencies with the
// watch racing the create call, throughput, and the rows' budget.
#include "bench/gate_tracker.h"

#include <catch2/catch.hpp>

#include "api/added_term.h"
#include "api/names.h"
#include "api/term_and.h"
#include "bench/kubevirt_objects.h"

namespace kmt::bench {
namespace {

using std::chrono::milliseconds;

api::NodeSelectorTerm Term() { return *api::ParseAddedTerm(NodeTerm("node-a")).term; }

// The pod as the AND patch leaves it.
Json ReleasedPod(int i) {
  Json pod = TargetPod(i, "vms", "mig", "uid", "node-b", true);
  pod["metadata"]["uid"] = "pod-uid";
  pod["metadata"]["resourceVersion"] = "7";
  return pod.patch(Json(api::AndTermIntoPod(pod, Term(), api::kSchedulingGate)));
}

TEST_CASE("Released needs the gate gone and the term in place") {
  Json gated = TargetPod(1, "vms", "mig", "uid", "node-b", true);
  Json ungated_without_term = TargetPod(1, "vms", "mig", "uid", "node-b", false);
  Json released = ReleasedPod(1);
  Json term_but_gated = released;
  term_but_gated["spec"]["schedulingGates"] = {{{"name", std::string(api::kSchedulingGate)}}};
  Json other_gate_kept = released;
  other_gate_kept["spec"]["schedulingGates"] = {{{"name", "example.com/other"}}};
  CHECK_FALSE(Released(gated, Term()));
  CHECK_FALSE(Released(ungated_without_term, Term()));
  CHECK_FALSE(Released(term_but_gated, Term()));
  CHECK(Released(released, Term()));
  CHECK(Released(other_gate_kept, Term()));
}

TEST_CASE("GateTracker latencies, a watch racing the create answer, throughput") {
  GateTracker t(Term(), 2);
  const SteadyTime t0{};
  const std::string a = "virt-launcher-vm-1-target", b = "virt-launcher-vm-2-target";
  t.Created(a, t0 + milliseconds(10));
  CHECK_FALSE(t.Observe(TargetPod(1, "vms", "mig", "uid", "node-b", true), t0 + milliseconds(20)));
  CHECK(t.Observe(ReleasedPod(1), t0 + milliseconds(40)));
  CHECK_FALSE(t.Observe(ReleasedPod(1), t0 + milliseconds(90)));  // only the first counts
  CHECK_FALSE(t.WaitDone(t0));
  CHECK(t.Observe(ReleasedPod(2), t0 + milliseconds(50)));  // seen before the create returned
  t.Created(b, t0 + milliseconds(60));
  CHECK(t.WaitDone(t0));
  CHECK(t.released() == 2);
  std::vector<double> lat = t.Latencies();
  REQUIRE(lat.size() == 2);
  CHECK(lat[0] == Approx(0.030));
  CHECK(lat[1] == 0.0);
  CHECK(t.Throughput() == Approx(2 / 0.040));  // 10 ms → 50 ms
}

TEST_CASE("GateRows judge p99 ≤ 1.3 × floor at N = 200, ≤ 1.2 × at N = 50, throughput ≤ 1.1 ×") {
  GateRun op{200, {200, 0.1, 0.325, 0.6, 0.2}, 100, 200};
  GateRun floor{200, {200, 0.05, 0.25, 0.3, 0.1}, 110, 200};
  std::vector<Row> rows = GateRows(op, floor);
  REQUIRE(rows.size() == 5);
  CHECK(rows[1].figure == "p99 (N = 200)");
  CHECK(rows[1].ratio == "1.30×");
  CHECK(rows[1].budget == "≤ 1.3× floor");
  CHECK(rows[1].pass == true);
  CHECK(rows[3].ratio == "1.10×");
  CHECK(rows[3].pass == true);
  CHECK(rows[4].value == "200 / 200");
  op.latency.p99 = 0.33;
  CHECK(GateRows(op, floor)[1].pass == false);
  op.throughput = 99;
  CHECK(GateRows(op, floor)[3].pass == false);
  op.latency.p99 = 0.3;
  op.throughput = 100;
  op.released = 199;
  CHECK(GateRows(op, floor)[1].pass == false);
  CHECK(GateRows(op, floor)[4].pass == false);
  op.released = 200;
  op.n = floor.n = 50;
  op.released = floor.released = 50;
  CHECK(GateRows(op, floor)[1].budget == "≤ 1.2× floor");
  op.latency.p99 = 0.31;  // over 1.2 × 0.25
  CHECK(GateRows(op, floor)[1].pass == false);
  op.latency.p99 = 0.29;
  CHECK(GateRows(op, floor)[1].pass == true);
  op.n = floor.n = 1;
  CHECK(GateRows(op, floor)[1].pass == std::nullopt);
  CHECK(GateRows(op, floor)[3].pass == std::nullopt);
}

TEST_CASE("WorkRows read the operator's queue and reconcile figures from two scrapes") {
  const std::string before =
      "# HELP controller_runtime_reconcile_total Total number of reconciliations\n"
      "controller_runtime_reconcile_total{controller=\"vmim\",result=\"success\"} 10\n"
      "controller_runtime_reconcile_total{controller=\"vmim\",result=\"requeue\"} 2\n"
      "controller_runtime_reconcile_time_seconds_sum{controller=\"vmim\"} 99\n"
      "workqueue_retries_total{name=\"vmim\"} 1\n"
      "workqueue_queue_duration_seconds_sum{name=\"vmim\"} 0.5\n"
      "workqueue_queue_duration_seconds_count{name=\"vmim\"} 12\n"
      "workqueue_work_duration_seconds_sum{name=\"vmim\"} 0.25\n"
      "workqueue_work_duration_seconds_count{name=\"vmim\"} 12\n";
  const std::string after =
      "controller_runtime_reconcile_total{controller=\"vmim\",result=\"success\"} 110\n"
      "controller_runtime_reconcile_total{controller=\"vmim\",result=\"requeue\"} 2\n"
      "controller_runtime_reconcile_total_bogus 1000\n"
      "workqueue_retries_total{name=\"vmim\"} 4\n"
      "workqueue_queue_duration_seconds_sum{name=\"vmim\"} 10.5\n"
      "workqueue_queue_duration_seconds_count{name=\"vmim\"} 112\n"
      "workqueue_work_duration_seconds_sum{name=\"vmim\"} 5.25\n"
      "workqueue_work_duration_seconds_count{name=\"vmim\"} 112\n";
  CHECK(MetricTotal(before, "controller_runtime_reconcile_total") == 12);
  CHECK(MetricTotal(before, "no_such_metric") == 0);
  const OperatorWork w = OperatorWorkOf(after) - OperatorWorkOf(before);
  CHECK(w.reconciles == 100);
  CHECK(w.retries == 3);
  const std::vector<Row> rows = WorkRows(50, 50, w);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].figure == "operator: reconciles per released pod (N = 50)");
  CHECK(rows[0].value == "2.00");
  CHECK(rows[1].value == FormatSeconds(0.1));
  CHECK(rows[2].value == FormatSeconds(0.05));
  CHECK(rows[3].value == "3");
}

TEST_CASE("MedianRun takes each figure's middle round and the least released") {
  CHECK(MedianRun({}).n == 0);
  const GateRun a{50, {50, 0.10, 0.30, 0.40, 0.12}, 90, 50};
  const GateRun b{50, {50, 0.20, 0.20, 0.25, 0.18}, 120, 49};
  const GateRun c{50, {50, 0.15, 0.50, 0.60, 0.15}, 100, 50};
  const GateRun m = MedianRun({a, b, c});
  CHECK(m.n == 50);
  CHECK(m.latency.p50 == 0.15);
  CHECK(m.latency.p99 == 0.30);
  CHECK(m.latency.max == 0.40);
  CHECK(m.latency.mean == 0.15);
  CHECK(m.throughput == 100);
  CHECK(m.released == 49);  // one round missed a pod: the budget rows fail
  CHECK(GateRows(m, MedianRun({a, a, a}))[4].pass == false);
  // An even count: the lower middle (nearest rank), never an average of two.
  CHECK(MedianRun({a, c}).latency.p99 == 0.30);
  CHECK(MedianRun({a}).latency.p99 == 0.30);
}

TEST_CASE("RoundRows show each round's ratios, none for one round") {
  const GateRun op1{200, {200, 0.1, 0.26, 0.3, 0.1}, 100, 200};
  const GateRun op2{200, {200, 0.1, 0.50, 0.6, 0.1}, 50, 200};
  const GateRun fl{200, {200, 0.1, 0.25, 0.3, 0.1}, 100, 200};
  CHECK(RoundRows({op1}, {fl}).empty());
  const std::vector<Row> rows = RoundRows({op1, op2}, {fl, fl});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].figure == "ratios per round (N = 200)");
  CHECK(rows[0].value == "p99 1.04× 2.00×; throughput 1.00× 2.00×");
  CHECK(rows[0].pass == std::nullopt);
}

TEST_CASE("OperatorWork of rounds adds up") {
  const OperatorWork a{10, 1, 0.5, 10, 0.2, 10};
  const OperatorWork b{20, 0, 1.5, 20, 0.4, 20};
  const OperatorWork s = a + b;
  CHECK(s.reconciles == 30);
  CHECK(s.retries == 1);
  CHECK(s.queue_seconds == 2.0);
  CHECK(s.queue_count == 30);
  CHECK(s.work_seconds == Approx(0.6));
  CHECK(s.work_count == 30);
}

}  // namespace
}  // namespace kmt::bench
