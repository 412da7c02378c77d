// cmd/operator/probes.h — the operator's own HTTP endpoints: /healthz and /readyz on
// --health-probe-bind-address (":8081", plain HTTP, for the kubelet), /metrics on
// --metrics-bind-address (":8443": HTTPS with the scraper authenticated and authorized, see
// cmd/operator/metrics_auth.h; plain HTTP only with --metrics-secure=false), as
// controller-runtime's manager serves them.
//
// Health answers mirror controller-runtime's pkg/healthz: all checks pass →
// 200 "ok" (with ?verbose, the list and "healthz check passed"); any fails →
// 500 with "[+]name ok" / "[-]name failed: reason withheld" lines sorted by
// name and "healthz check failed". No checks → a single passing "ping".
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/metrics.h"

namespace kmt::http {
class Server;
struct LogRecord;
}  // namespace kmt::http

namespace kmt::cmd {

struct HealthCheck {
  std::string name;
  std::function<bool()> ok;
};

struct HttpAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
};

// The answer of a /healthz or /readyz request (pure).
HttpAnswer AnswerChecks(const std::vector<HealthCheck>& checks, bool verbose);

// The answer of /metrics (pure).
HttpAnswer AnswerMetrics(const base::Registry& registry);

// Splits "host:port" / ":port" ("" host → all interfaces, 0.0.0.0). "0" or
// an empty string disables the endpoint (returns false with *port = -1).
// Throws std::invalid_argument on malformed text.
bool ParseBindAddress(const std::string& text, std::string* host, int* port);

// A small HTTP/1.1 server serving fixed GET routes, on the same event-driven core as the
// admission webhook (http/server.h: deadlines on every phase, bounded connections), since
// the probe and metrics ports are just as reachable from the pod network.
struct ProbeServerOptions {
  // HTTPS when set (see http::ServerConfig::configure_tls); plain HTTP when empty.
  std::function<bool(SSL_CTX*)> configure_tls;
  // Asked before every route's answer, on a handler thread (it may block on the API server):
  // an answer to send instead (401, 403, ...), or nullopt to serve the route.
  std::function<std::optional<HttpAnswer>(std::string_view method, std::string_view path,
                                          std::string_view authorization)>
      gate;
  // The server's records (a handler that threw, an accept that failed), as data: the operator
  // renders them into its logger with http::SinkTo; default: http::LogToStderr.
  std::function<void(const http::LogRecord&)> log;
};

class ProbeServer {
 public:
  using Route = std::pair<std::string, std::function<HttpAnswer(bool verbose)>>;

  ProbeServer(std::string host, int port, std::vector<Route> routes,
              ProbeServerOptions options = {});
  ~ProbeServer();  // Stop()
  ProbeServer(const ProbeServer&) = delete;
  ProbeServer& operator=(const ProbeServer&) = delete;

  // Binds (throws std::runtime_error naming the address when it cannot) and serves.
  void Start();
  void Stop();
  int port() const { return port_.load(); }

 private:
  std::string host_;
  int requested_port_;
  std::vector<Route> routes_;
  ProbeServerOptions options_;
  std::unique_ptr<http::Server> http_;
  std::atomic<int> port_{0};
};

}  // namespace kmt::cmd
