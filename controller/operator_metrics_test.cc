// controller/operator_metrics_test.cc — controller-runtime's names on /metrics.
#include "controller/operator_metrics.h"

#include <catch2/catch.hpp>

#include "base/fake_clock.h"

namespace kmt::controller {
namespace {

using std::chrono::milliseconds;

bool HasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

TEST_CASE("Reconcile results start at zero and count by result") {
  base::Registry r;
  OperatorMetrics m(r, "vmim");
  // Binary fractions of a second, so the sum is exact: 2^-8 s and 2^-5 s.
  const base::Duration small = std::chrono::nanoseconds(3906250);
  const base::Duration large = std::chrono::nanoseconds(31250000);
  m.ObserveReconcile(ReconcileResult::kSuccess, small);
  m.ObserveReconcile(ReconcileResult::kError, large);
  m.ObserveReconcile(ReconcileResult::kRequeueAfter, small);
  m.TerminalError();
  std::string text = r.Render();
  CAPTURE(text);
  for (const char* line : {
           "# TYPE controller_runtime_reconcile_total counter",
           R"(controller_runtime_reconcile_total{controller="vmim",result="error"} 1)",
           R"(controller_runtime_reconcile_total{controller="vmim",result="requeue"} 0)",
           R"(controller_runtime_reconcile_total{controller="vmim",result="requeue_after"} 1)",
           R"(controller_runtime_reconcile_total{controller="vmim",result="success"} 1)",
           "controller_runtime_reconcile_errors_total{controller=\"vmim\"} 1",
           "controller_runtime_terminal_reconcile_errors_total{controller=\"vmim\"} 1",
           R"(controller_runtime_reconcile_time_seconds_bucket{controller="vmim",le="0.005"} 2)",
           R"(controller_runtime_reconcile_time_seconds_bucket{controller="vmim",le="0.05"} 3)",
           R"(controller_runtime_reconcile_time_seconds_bucket{controller="vmim",le="60"} 3)",
           "controller_runtime_reconcile_time_seconds_count{controller=\"vmim\"} 3",
           "controller_runtime_reconcile_time_seconds_sum{controller=\"vmim\"} 0.0390625",
       }) {
    CAPTURE(line);
    REQUIRE(HasLine(text, line));
  }
}

TEST_CASE("The work queue feeds workqueue_* through the hooks") {
  base::Registry r;
  OperatorMetrics m(r, "vmim");
  base::FakeClock clock;
  WorkQueue q(clock, {}, &m.queue());
  q.Add("ns/a");
  q.Add("ns/b");
  clock.Advance(milliseconds(2));
  auto key = q.TryGet();
  clock.Advance(milliseconds(20));
  q.AddRateLimited(*key);
  q.Done(*key);
  std::string text = r.Render();
  CAPTURE(text);
  for (const char* line : {
           "workqueue_depth{name=\"vmim\"} 1",
           "workqueue_adds_total{name=\"vmim\"} 2",
           "workqueue_retries_total{name=\"vmim\"} 1",
           R"(workqueue_queue_duration_seconds_bucket{name="vmim",le="0.001"} 0)",
           R"(workqueue_queue_duration_seconds_bucket{name="vmim",le="0.01"} 1)",
           "workqueue_queue_duration_seconds_count{name=\"vmim\"} 1",
           R"(workqueue_work_duration_seconds_bucket{name="vmim",le="0.01"} 0)",
           R"(workqueue_work_duration_seconds_bucket{name="vmim",le="0.1"} 1)",
           "workqueue_work_duration_seconds_sum{name=\"vmim\"} 0.02",
       }) {
    CAPTURE(line);
    REQUIRE(HasLine(text, line));
  }
}

TEST_CASE("Gate release latency is a histogram without labels") {
  base::Registry r;
  OperatorMetrics m(r, "vmim");
  m.ObserveGateRelease(milliseconds(40));
  std::string text = r.Render();
  REQUIRE(HasLine(text, "kmt_gate_release_seconds_bucket{le=\"0.025\"} 0"));
  REQUIRE(HasLine(text, "kmt_gate_release_seconds_bucket{le=\"0.05\"} 1"));
  REQUIRE(HasLine(text, "kmt_gate_release_seconds_count 1"));
}

TEST_CASE("Escaped target pods are a counter without labels, at zero from the start") {
  base::Registry r;
  OperatorMetrics m(r, "vmim");
  REQUIRE(HasLine(r.Render(), "kmt_target_pod_escaped_gate_total 0"));
  m.TargetPodEscapedGate();
  m.TargetPodEscapedGate();
  REQUIRE(HasLine(r.Render(), "kmt_target_pod_escaped_gate_total 2"));
}

}  // namespace
}  // namespace kmt::controller
