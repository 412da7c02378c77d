#include "cmd/operator/webhook_metrics.h"

#include <catch2/catch.hpp>
#include <string>

namespace kmt::cmd {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST_CASE("WebhookMetrics renders controller-runtime's webhook series and connection counts") {
  base::Registry r;
  WebhookMetrics m(r, {"/validate-vmim", "/mutate-pod"});
  std::string before = r.Render();
  CHECK(Has(before, "controller_runtime_webhook_requests_in_flight{webhook=\"/mutate-pod\"} 0"));
  CHECK(
      Has(before,
          "controller_runtime_webhook_requests_total{webhook=\"/validate-vmim\",code=\"200\"} 0"));
  CHECK(Has(before, "kmt_webhook_open_connections 0"));
  CHECK(Has(before, "kmt_webhook_requests_deferred_total{webhook=\"/mutate-pod\"} 0"));

  m.ConnectionOpened();
  m.ConnectionOpened();
  m.RequestStarted("/validate-vmim");
  std::string during = r.Render();
  CHECK(Has(during, "controller_runtime_webhook_requests_in_flight{webhook=\"/validate-vmim\"} 1"));
  CHECK(Has(during, "kmt_webhook_open_connections 2"));

  m.RequestFinished("/validate-vmim", 413, std::chrono::milliseconds(3));
  m.ConnectionClosed(http::CloseReason::kHandshakeTimeout);
  std::string after = r.Render();
  CHECK(Has(after, "controller_runtime_webhook_requests_in_flight{webhook=\"/validate-vmim\"} 0"));
  CHECK(
      Has(after,
          "controller_runtime_webhook_requests_total{webhook=\"/validate-vmim\",code=\"413\"} 1"));
  CHECK(Has(after,
            "controller_runtime_webhook_latency_seconds_bucket{webhook=\"/validate-vmim\","
            "le=\"0.005\"} 1"));
  CHECK(
      Has(after, "controller_runtime_webhook_latency_seconds_count{webhook=\"/validate-vmim\"} 1"));
  CHECK(Has(after, "kmt_webhook_open_connections 1"));
  CHECK(Has(after, "kmt_webhook_connections_closed_total{reason=\"handshake_timeout\"} 1"));

  m.RequestDeferred("/validate-vmim");
  CHECK(Has(r.Render(), "kmt_webhook_requests_deferred_total{webhook=\"/validate-vmim\"} 1"));
}

}  // namespace
}  // namespace kmt::cmd
