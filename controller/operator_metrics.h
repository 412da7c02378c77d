// controller/operator_metrics.h — the operator's metrics, under
// controller-runtime's names so existing dashboards and alerts work:
//
//   workqueue_depth{name}                         gauge
//   workqueue_adds_total{name}                    counter
//   workqueue_retries_total{name}                 counter
//   workqueue_queue_duration_seconds{name}        histogram (1e-8 s … 1000 s, x10)
//   workqueue_work_duration_seconds{name}         histogram (same buckets)
//   controller_runtime_reconcile_total{controller,result}  result =
//   success|error|requeue|requeue_after controller_runtime_reconcile_errors_total{controller}
//   controller_runtime_terminal_reconcile_errors_total{controller}
//   controller_runtime_reconcile_time_seconds{controller}  histogram (5 ms … 60 s)
//   kmt_gate_release_seconds                      histogram: target pod created → gate released
//   kmt_target_pod_escaped_gate_total             counter: addedNodeSelectorTermApplied set to
//                                                 False/TargetPodEscapedGate (status written)
//
// The work queue and controller use the name "vmim".
#pragma once

#include <string>

#include "base/clock.h"
#include "base/metrics.h"
#include "controller/work_queue.h"

namespace kmt::controller {

enum class ReconcileResult { kSuccess, kError, kRequeue, kRequeueAfter };
const char* ReconcileResultName(ReconcileResult r);  // "success", "error", ...

class OperatorMetrics {
 public:
  // Registers every family in `registry` and creates the series of
  // `controller` at zero (as controller-runtime does when a controller starts).
  OperatorMetrics(base::Registry& registry, const std::string& controller);

  // Hooks for the work queue (WorkQueueMetrics), labelled name=<controller>.
  WorkQueueMetrics& queue() { return queue_; }

  void ObserveReconcile(ReconcileResult result, base::Duration took);
  void TerminalError();
  void ObserveGateRelease(base::Duration since_pod_created);
  void TargetPodEscapedGate();

 private:
  class QueueHooks : public WorkQueueMetrics {
   public:
    QueueHooks(base::Registry& r, const std::string& name);
    void Depth(int64_t depth) override;
    void Added() override;
    void Retried() override;
    void QueueLatency(base::Duration waited) override;
    void WorkDuration(base::Duration worked) override;

   private:
    base::Gauge& depth_;
    base::Counter& adds_;
    base::Counter& retries_;
    base::Histogram& latency_;
    base::Histogram& work_;
  };

  QueueHooks queue_;
  base::CounterFamily& reconcile_total_;
  base::Counter& reconcile_errors_;
  base::Counter& terminal_errors_;
  base::Histogram& reconcile_time_;
  base::Histogram& gate_release_;
  base::Counter& escaped_;
  std::string controller_;
};

}  // namespace kmt::controller
