#include "cmd/operator/webhook_metrics.h"

namespace kmt::cmd {
namespace {

// Prometheus' DefBuckets, which controller-runtime's webhook latency histogram uses.
std::vector<double> DefaultBuckets() { return {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}; }

}  // namespace

WebhookMetrics::WebhookMetrics(base::Registry& registry, const std::vector<std::string>& paths)
    : requests_(registry.AddCounter("controller_runtime_webhook_requests_total",
                                    "Total number of admission requests by HTTP status code.",
                                    {"webhook", "code"})),
      latency_(registry.AddHistogram("controller_runtime_webhook_latency_seconds",
                                     "Histogram of the latency of processing admission requests",
                                     {"webhook"}, DefaultBuckets())),
      in_flight_(registry.AddGauge("controller_runtime_webhook_requests_in_flight",
                                   "Current number of admission requests being served.",
                                   {"webhook"})),
      open_(registry
                .AddGauge("kmt_webhook_open_connections",
                          "Connections the admission server holds open now.")
                .WithLabels({})),
      closed_(registry.AddCounter("kmt_webhook_connections_closed_total",
                                  "Connections the admission server closed or lost, by reason.",
                                  {"reason"})),
      deferred_(registry.AddCounter(
          "kmt_webhook_requests_deferred_total",
          "Admission requests not decided on the I/O thread that read them (a "
          "SubjectAccessReview or a read the caches did not hold) and handed to a worker.",
          {"webhook"})) {
  for (const std::string& p : paths) {
    in_flight_.WithLabels({p});
    requests_.WithLabels({p, "200"});
    deferred_.WithLabels({p});
  }
}

void WebhookMetrics::ConnectionOpened() { open_.Add(1); }

void WebhookMetrics::ConnectionClosed(http::CloseReason reason) {
  open_.Add(-1);
  closed_.WithLabels({std::string(http::ToString(reason))}).Inc();
}

void WebhookMetrics::RequestStarted(const std::string& label) {
  in_flight_.WithLabels({label}).Add(1);
}

void WebhookMetrics::RequestDeferred(const std::string& label) {
  deferred_.WithLabels({label}).Inc();
}

void WebhookMetrics::RequestFinished(const std::string& label, int status,
                                     std::chrono::duration<double> elapsed) {
  in_flight_.WithLabels({label}).Add(-1);
  requests_.WithLabels({label, std::to_string(status)}).Inc();
  latency_.WithLabels({label}).Observe(elapsed.count());
}

}  // namespace kmt::cmd
