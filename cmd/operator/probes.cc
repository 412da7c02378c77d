// cmd/operator/probes.cc
#include "cmd/operator/probes.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "http/server.h"

namespace kmt::cmd {
namespace {

// Threads per probe or metrics server. Connections cost no thread (http/server.h), so one
// I/O thread and two for answers (a scrape renders every series) are plenty for a few
// requests a minute.
constexpr size_t kProbeHandlerThreads = 2;

// "verbose" is one of the query's parameters ("verbose", "verbose=1", "a=b&verbose").
bool HasParam(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    if (part.substr(0, part.find('=')) == name) return true;
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return false;
}

}  // namespace

HttpAnswer AnswerChecks(const std::vector<HealthCheck>& checks, bool verbose) {
  std::vector<std::pair<std::string, bool>> parts;
  bool failed = false;
  for (const auto& c : checks) {
    bool ok = false;
    try {
      ok = c.ok();
    } catch (...) {
      ok = false;
    }
    parts.emplace_back(c.name, ok);
    failed = failed || !ok;
  }
  if (checks.empty()) parts.emplace_back("ping", true);
  std::ranges::sort(parts);
  HttpAnswer a;
  a.content_type = "text/plain; charset=utf-8";
  if (!failed && !verbose) {
    a.body = "ok";
    return a;
  }
  for (const auto& [name, ok] : parts) {
    a.body += ok ? "[+]" + name + " ok\n" : "[-]" + name + " failed: reason withheld\n";
  }
  a.body += failed ? "healthz check failed\n" : "healthz check passed\n";
  a.status = failed ? 500 : 200;
  return a;
}

HttpAnswer AnswerMetrics(const base::Registry& registry) {
  return {200, "text/plain; version=0.0.4; charset=utf-8", registry.Render()};
}

bool ParseBindAddress(const std::string& text, std::string* host, int* port) {
  if (text.empty() || text == "0") {
    *port = -1;
    return false;
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    throw std::invalid_argument("bind address \"" + text + "\" must be host:port or :port");
  }
  std::string h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  const std::string p = text.substr(colon + 1);
  if (p.empty() || p.size() > 5 || !std::ranges::all_of(p, ::isdigit) || std::stoi(p) > 65535) {
    throw std::invalid_argument("bind address \"" + text + "\" has an invalid port");
  }
  *host = h.empty() ? "0.0.0.0" : h;
  *port = std::stoi(p);
  return true;
}

ProbeServer::ProbeServer(std::string host, int port, std::vector<Route> routes,
                         ProbeServerOptions options)
    : host_(std::move(host)),
      requested_port_(port),
      routes_(std::move(routes)),
      options_(std::move(options)) {}

ProbeServer::~ProbeServer() { Stop(); }

void ProbeServer::Start() {
  http::ServerConfig c;
  c.address = host_;
  c.port = requested_port_;
  c.handler_threads = kProbeHandlerThreads;
  c.handler_queue = 64;
  c.configure_tls = options_.configure_tls;
  c.log = options_.log;  // answers are logged by no one
  std::vector<http::Route> routes;
  routes.reserve(routes_.size());
  for (const auto& [path, answer] : routes_) {
    routes.emplace_back(
        "GET", path,
        [answer = answer, gate = options_.gate](const http::Request& req) {
          std::optional<HttpAnswer> refused;
          if (gate) refused = gate(req.method, req.path, req.authorization);
          HttpAnswer a = refused ? std::move(*refused) : answer(HasParam(req.query, "verbose"));
          http::Response r;
          r.status = a.status;
          r.content_type = a.content_type;
          r.body = std::move(a.body);
          return r;
        },
        /*inline_handler=*/false, "");
  }
  http_ = std::make_unique<http::Server>(std::move(c), std::move(routes));
  http_->Start();  // throws std::runtime_error naming the address
  port_ = http_->port();
}

void ProbeServer::Stop() {
  if (!http_) return;
  http_->Stop();
  http_.reset();
}

}  // namespace kmt::cmd
