// webhook/server.h — the HTTPS shell around the admitters.
//
// AdmissionServer serves AdmissionReview (admission.k8s.io/v1) on HTTPS with TLS 1.2 or
// newer, presenting the certificate in cert_file/key_file and picking up a rotated pair
// within cert_poll_interval (webhook/serving_cert.h). It is embeddable: the operator
// binary starts one on every replica.
//
// The shell is strict, like controller-runtime's webhook server: a body over max_body_bytes
// (7 MiB) → HTTP 413 (also for chunked bodies, which httplib itself does not cap); the rest
// of the decision (empty body, content type, decoding, exceptions, uid echo) is
// ServeAdmission's (webhook/shell.h). Reads and writes time out (a slow client cannot hold
// a worker), and a fixed pool of workers serves the connections (webhook/worker_pool.h).
//
// GET /healthz answers 200 while the server runs; GET /readyz answers 200 once a
// certificate is loaded, 503 before.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "webhook/admission.h"
#include "webhook/shell.h"

namespace httplib {
class SSLServer;
}  // namespace httplib

namespace kmt::webhook {

class ServingCertificate;

// One record of the server's log: a message and its fields, in order.
struct ServerLogEntry {
  bool error = false;
  std::string msg;
  std::vector<std::pair<std::string, std::string>> fields;
};

struct ServerOptions {
  std::string address = "0.0.0.0";
  int port = 9443;  // 0: any free port (see AdmissionServer::port())
  // controller-runtime's default certificate directory layout.
  std::string cert_file = "/tmp/k8s-webhook-server/serving-certs/tls.crt";
  std::string key_file = "/tmp/k8s-webhook-server/serving-certs/tls.key";
  std::chrono::milliseconds cert_poll_interval{1000};

  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds write_timeout{10000};
  // An idle keep-alive connection holds a worker, so keep this short.
  std::chrono::seconds keep_alive_timeout{5};
  size_t keep_alive_max_requests = 100;
  size_t workers = 8;
  size_t max_queued_connections = 64;
  size_t max_body_bytes = size_t{7} * 1024 * 1024;

  // Each log record, as data (the operator renders it with its own logger); default: one
  // plain line on standard error.
  std::function<void(const ServerLogEntry&)> log;
};

struct Route {
  std::string path;  // exact, e.g. "/validate-vmim"
  Admitter admit;
};

class AdmissionServer {
 public:
  AdmissionServer(ServerOptions options, std::vector<Route> routes);
  ~AdmissionServer();  // Stop()
  AdmissionServer(const AdmissionServer&) = delete;
  AdmissionServer& operator=(const AdmissionServer&) = delete;

  // Loads the certificate (a missing or broken one is retried by the poller; the server
  // answers handshakes only once one loads), binds and starts serving. Throws
  // std::runtime_error when the address cannot be bound. Call once.
  void Start();

  // Stops accepting, lets requests in flight finish, joins every thread. Idempotent.
  void Stop();

  // Serving with a certificate loaded.
  bool Ready() const;

  // The bound port (useful with port 0); 0 before Start().
  int port() const { return port_.load(); }

  // Checks the certificate files now instead of waiting for the next poll; returns whether
  // a new pair is being served.
  bool ReloadCertificate();

 private:
  void Log(ServerLogEntry entry) const;
  void PollCertificate();

  ServerOptions options_;
  std::vector<Route> routes_;
  std::unique_ptr<ServingCertificate> cert_;
  std::unique_ptr<httplib::SSLServer> http_;
  std::atomic<int> port_{0};
  std::atomic<bool> serving_{false};
  std::atomic<bool> listen_returned_{false};
  std::mutex log_mu_;
  std::string last_failure_;  // guarded by log_mu_
  std::thread listen_thread_;
  std::thread poll_thread_;
  std::mutex poll_mu_;
  std::condition_variable poll_cv_;
  bool stopping_ = false;  // guarded by poll_mu_
  bool started_ = false;
};

}  // namespace kmt::webhook
