// cmd/operator/webhook_metrics.h — the admission server's metrics, under controller-runtime's
// webhook names (pkg/webhook/internal/metrics) so its dashboards and alerts work, plus the
// connection counts that show a flood:
//
//   controller_runtime_webhook_requests_total{webhook,code}   counter: answers by HTTP status
//   controller_runtime_webhook_latency_seconds{webhook}       histogram: end of the request's
//                                                             headers → answer written
//                                                             (Prometheus' default buckets)
//   controller_runtime_webhook_requests_in_flight{webhook}    gauge
//   kmt_webhook_open_connections                              gauge: connections held now
//   kmt_webhook_connections_closed_total{reason}              counter: why they went
//                                                             (http::CloseReason names:
//                                                             handshake_timeout, evicted, ...)
//   kmt_webhook_requests_deferred_total{webhook}              counter: reviews that could not
//                                                             be decided on the I/O thread (a
//                                                             SubjectAccessReview or read the
//                                                             caches did not hold) and waited
//                                                             for a worker
//
// `webhook` is the route's path ("/validate-vmim"), as controller-runtime labels it.
#pragma once

#include <string>
#include <vector>

#include "base/metrics.h"
#include "http/server.h"

namespace kmt::cmd {

class WebhookMetrics : public http::ServerObserver {
 public:
  // Registers the families in `registry`; the series of every path in `paths` start at 0.
  WebhookMetrics(base::Registry& registry, const std::vector<std::string>& paths);

  void ConnectionOpened() override;
  void ConnectionClosed(http::CloseReason reason) override;
  void RequestStarted(const std::string& label) override;
  void RequestFinished(const std::string& label, int status,
                       std::chrono::duration<double> elapsed) override;
  void RequestDeferred(const std::string& label) override;

 private:
  base::CounterFamily& requests_;
  base::HistogramFamily& latency_;
  base::GaugeFamily& in_flight_;
  base::Gauge& open_;
  base::CounterFamily& closed_;
  base::CounterFamily& deferred_;
};

}  // namespace kmt::cmd
