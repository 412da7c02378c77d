// controller/probes.cc
#include "controller/probes.h"

#include <httplib.h>

#include <algorithm>
#include <stdexcept>

namespace kmt::controller {
namespace {

// Workers per probe or metrics server: a liveness and a readiness probe and a scrape can be
// answered at once, plus one spare for a keep-alive connection left idle.
constexpr size_t kProbeThreads = 4;

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
  std::sort(parts.begin(), parts.end());
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

HttpAnswer AnswerMetrics(const Registry& registry) {
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
  if (p.empty() || p.size() > 5 || !std::all_of(p.begin(), p.end(), ::isdigit) ||
      std::stoi(p) > 65535) {
    throw std::invalid_argument("bind address \"" + text + "\" has an invalid port");
  }
  *host = h.empty() ? "0.0.0.0" : h;
  *port = std::stoi(p);
  return true;
}

ProbeServer::ProbeServer(std::string host, int port, std::vector<Route> routes)
    : host_(std::move(host)), requested_port_(port), routes_(std::move(routes)) {}

ProbeServer::~ProbeServer() { Stop(); }

void ProbeServer::Start() {
  http_ = std::make_unique<httplib::Server>();
  // Probes and scrapes are a few requests a minute: a small pool, not httplib's default of
  // eight threads per server (each thread that allocates gets its own malloc arena).
  http_->new_task_queue = [] { return new httplib::ThreadPool(kProbeThreads); };
  http_->set_read_timeout(5, 0);
  http_->set_write_timeout(5, 0);
  for (const auto& [path, answer] : routes_) {
    http_->Get(path, [answer = answer](const httplib::Request& req, httplib::Response& res) {
      HttpAnswer a = answer(req.has_param("verbose"));
      res.status = a.status;
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_content(a.body, a.content_type.c_str());
    });
  }
  int bound = requested_port_ == 0
                  ? http_->bind_to_any_port(host_)
                  : (http_->bind_to_port(host_, requested_port_) ? requested_port_ : -1);
  if (bound < 0) {
    throw std::runtime_error("cannot listen on " + host_ + ":" + std::to_string(requested_port_));
  }
  port_ = bound;
  thread_ = std::thread([this] { http_->listen_after_bind(); });
}

void ProbeServer::Stop() {
  if (!http_) return;
  http_->stop();
  if (thread_.joinable()) thread_.join();
  http_.reset();
}

}  // namespace kmt::controller
