// controller/operator_metrics.cc
#include "controller/operator_metrics.h"

namespace kmt::controller {

namespace {

// controller-runtime pkg/metrics/workqueue.go: ExponentialBuckets(10e-9, 10, 12).
std::vector<double> QueueBuckets() { return base::ExponentialBuckets(10e-9, 10, 12); }

// controller-runtime pkg/internal/controller/metrics: reconcile time buckets.
std::vector<double> ReconcileBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
          0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
          6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};
}

// Gate release is one watch event plus one PATCH: milliseconds when healthy.
std::vector<double> GateReleaseBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

}  // namespace

const char* ReconcileResultName(ReconcileResult r) {
  switch (r) {
    case ReconcileResult::kSuccess:
      return "success";
    case ReconcileResult::kError:
      return "error";
    case ReconcileResult::kRequeue:
      return "requeue";
    case ReconcileResult::kRequeueAfter:
      return "requeue_after";
  }
  return "unknown";
}

OperatorMetrics::QueueHooks::QueueHooks(base::Registry& r, const std::string& name)
    : depth_(
          r.AddGauge("workqueue_depth", "Current depth of workqueue", {"name"}).WithLabels({name})),
      adds_(r.AddCounter("workqueue_adds_total", "Total number of adds handled by workqueue",
                         {"name"})
                .WithLabels({name})),
      retries_(r.AddCounter("workqueue_retries_total",
                            "Total number of retries handled by workqueue", {"name"})
                   .WithLabels({name})),
      latency_(r.AddHistogram("workqueue_queue_duration_seconds",
                              "How long in seconds an item stays in workqueue before being "
                              "requested",
                              {"name"}, QueueBuckets())
                   .WithLabels({name})),
      work_(r.AddHistogram("workqueue_work_duration_seconds",
                           "How long in seconds processing an item from workqueue takes", {"name"},
                           QueueBuckets())
                .WithLabels({name})) {}

void OperatorMetrics::QueueHooks::Depth(int64_t depth) { depth_.Set(static_cast<double>(depth)); }
void OperatorMetrics::QueueHooks::Added() { adds_.Inc(); }
void OperatorMetrics::QueueHooks::Retried() { retries_.Inc(); }
void OperatorMetrics::QueueHooks::QueueLatency(base::Duration waited) {
  latency_.Observe(base::Seconds(waited));
}
void OperatorMetrics::QueueHooks::WorkDuration(base::Duration worked) {
  work_.Observe(base::Seconds(worked));
}

OperatorMetrics::OperatorMetrics(base::Registry& r, const std::string& controller)
    : queue_(r, controller),
      reconcile_total_(r.AddCounter("controller_runtime_reconcile_total",
                                    "Total number of reconciliations per controller",
                                    {"controller", "result"})),
      reconcile_errors_(r.AddCounter("controller_runtime_reconcile_errors_total",
                                     "Total number of reconciliation errors per controller",
                                     {"controller"})
                            .WithLabels({controller})),
      terminal_errors_(r.AddCounter("controller_runtime_terminal_reconcile_errors_total",
                                    "Total number of terminal reconciliation errors per controller",
                                    {"controller"})
                           .WithLabels({controller})),
      reconcile_time_(r.AddHistogram("controller_runtime_reconcile_time_seconds",
                                     "Length of time per reconciliation per controller",
                                     {"controller"}, ReconcileBuckets())
                          .WithLabels({controller})),
      gate_release_(r.AddHistogram("kmt_gate_release_seconds",
                                   "Time from the target pod's creation to the release of its "
                                   "scheduling gate with the term ANDed in",
                                   {}, GateReleaseBuckets())
                        .WithLabels({})),
      escaped_(r.AddCounter("kmt_target_pod_escaped_gate_total",
                            "Placed migrations whose target pod was found without the added term "
                            "after escaping the scheduling gate (addedNodeSelectorTermApplied="
                            "False/TargetPodEscapedGate written)",
                            {})
                   .WithLabels({})),
      controller_(controller) {
  for (auto r2 : {ReconcileResult::kSuccess, ReconcileResult::kError, ReconcileResult::kRequeue,
                  ReconcileResult::kRequeueAfter}) {
    reconcile_total_.WithLabels({controller_, ReconcileResultName(r2)});
  }
}

void OperatorMetrics::ObserveReconcile(ReconcileResult result, base::Duration took) {
  reconcile_total_.WithLabels({controller_, ReconcileResultName(result)}).Inc();
  if (result == ReconcileResult::kError) reconcile_errors_.Inc();
  reconcile_time_.Observe(base::Seconds(took));
}

void OperatorMetrics::TerminalError() { terminal_errors_.Inc(); }

void OperatorMetrics::TargetPodEscapedGate() { escaped_.Inc(); }

void OperatorMetrics::ObserveGateRelease(base::Duration since_pod_created) {
  gate_release_.Observe(base::Seconds(since_pod_created));
}

}  // namespace kmt::controller
