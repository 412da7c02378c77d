// webhook/server.h — the HTTPS shell around the admitters.
//
// AdmissionServer serves AdmissionReview (admission.k8s.io/v1) on HTTPS with TLS 1.2 or
// newer, presenting the certificate in cert_file/key_file and picking up a rotated pair
// within cert_poll_interval (webhook/serving_cert.h). It is embeddable: the operator
// binary starts one on every replica.
//
// It runs on the event-driven core of http/server.h, so idle, half-sent or trickling
// connections cannot take it down: every phase of a connection has a deadline (TLS
// handshake 2 s, headers 5 s, the whole request 30 s — the API server's longest webhook
// timeout —, the answer 10 s, keep-alive idle 60 s), at most limits.max_connections are
// open (the longest-idle connection that never completed a request is closed first), and
// a review that has to wait — a SubjectAccessReview the cache does not hold, a read the
// informers cannot answer — runs on its own pool of `workers` threads, never on the I/O
// threads. A review that needs no wait (the usual case: a cached SubjectAccessReview answer,
// the VMIM from the informer) is decided and answered on the I/O thread that read it, with no
// thread hand-off (http::Route::try_inline_max_body, base/blocking.h): the I/O thread tries
// first, and the first call on the way that would wait sends the review to the pool, where it
// is decided again from the start, from the review the I/O thread decoded (not parsed twice,
// within max_kept_review_bytes). Only bodies up to inline_max_body_bytes are tried so, and
// only while at most 64 connections are open (http::ServerConfig::inline_max_connections):
// under a flood of connections the I/O threads owe handshakes and reads to others, and every
// review goes to the workers, whose threads also write the answers.
//
// The shell is strict: an admission body over max_body_bytes (3.5 MiB) → HTTP 413, decided
// from Content-Length before the body is read (also for chunked bodies), and any body on
// /healthz or /readyz → 413; chunk lines and trailers over 4 KiB → 400; bodies of all
// connections together over max_held_body_bytes (16 MiB) → 503 with Retry-After; a review
// with more than webhook::kMaxJsonNodes nodes is refused before it is parsed; headers over
// 16 KiB → 431; a full admission queue → 503 with Retry-After; the
// rest of the decision (empty body, content type, decoding, exceptions, uid echo) is
// ServeAdmission's (webhook/shell.h). Every error answer is a metav1.Status.
//
// GET /healthz answers 200 while the server runs; GET /readyz answers 200 once a
// certificate is loaded, 503 before.
//
// With client_ca_file (mutual TLS), a handshake completes only for a client certificate that
// chains to that bundle (webhook/serving_cert.h): a client that is not the API server gets no
// HTTP at all, so it can neither send forged reviews nor read what the answers reveal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "http/server.h"
#include "webhook/admission.h"
#include "webhook/shell.h"

namespace kmt::webhook {

class ServingCertificate;
class ClientCertificateAuthority;

// One record of the server's log: a message and its fields, in order.
using ServerLogEntry = http::LogRecord;

struct ServerOptions {
  std::string address = "0.0.0.0";
  int port = 9443;  // 0: any free port (see AdmissionServer::port())
  // controller-runtime's default certificate directory layout.
  std::string cert_file = "/tmp/k8s-webhook-server/serving-certs/tls.crt";
  std::string key_file = "/tmp/k8s-webhook-server/serving-certs/tls.key";
  std::chrono::milliseconds cert_poll_interval{1000};
  // Times the certificate poll (a timer every cert_poll_interval: a FakeClock's Advance makes
  // it due) and the once-a-second limit of the rejection log; null: base::SystemClock().
  base::Clock* clock = nullptr;
  // Mutual TLS: a PEM bundle of the CAs whose client certificates the port accepts (the API
  // server presents one when its admission configuration gives it a kubeconfig for webhooks).
  // "" (default): any client that reaches the port may send reviews. Reloaded as it rotates,
  // with the serving pair; the server is not Ready() before it loads.
  std::string client_ca_file;

  // Deadlines per connection phase and the bound on open connections (http/connection_table.h).
  http::Limits limits;
  // The largest AdmissionReview: the API server takes at most 3 MiB per request and etcd
  // stores at most 1.5 MiB per object (its default --max-request-bytes), so a review of a
  // request that can succeed — object and, on UPDATE, oldObject, each within 1.5 MiB — plus
  // its envelope fits with room to spare.
  size_t max_body_bytes = size_t{7} * 512 * 1024;
  // Bodies held by every connection together (http::ServerConfig::max_held_body_bytes), well
  // under the Deployment's 256 Mi memory limit.
  size_t max_held_body_bytes = size_t{16} * 1024 * 1024;
  // Threads for TLS and HTTP I/O, and for admission work (a review may wait on a
  // SubjectAccessReview); at most `max_queued_reviews` wait for a worker, beyond that 503.
  // Two I/O threads, so a burst of TLS handshakes from a flood (each costs the thread a few
  // hundred microseconds) cannot hold up the API server's established connections alone.
  size_t io_threads = 2;
  size_t workers = 8;
  size_t max_queued_reviews = 1024;
  // Reviews up to this size are first decided on the I/O thread (see the banner); larger
  // ones go to the workers at once, so a large body's parse (about 1 ms per 100 KiB here)
  // never holds up the I/O thread's other connections. A VMIM review is 1-3 KiB, a
  // virt-launcher pod's 8-16 KiB. 0: every review goes to the workers.
  size_t inline_max_body_bytes = size_t{64} * 1024;
  // A review whose attempt on the I/O thread would have waited keeps what that attempt
  // decoded for its worker (http::Request::carried), which then decides it without parsing
  // the body again, while the decoded reviews kept so, together, are estimated at most this
  // many bytes: the body's size plus 64 per JSON node (nlohmann's DOM costs at most ~60 per
  // node counted by kMaxJsonNodes, webhook/admission.h). Beyond it a queued review holds only
  // its body, as before, and is parsed again on the worker. 0: none is kept.
  size_t max_kept_review_bytes = size_t{8} * 1024 * 1024;

  // Request and connection counts (the operator's /metrics); not owned, may be null.
  http::ServerObserver* observer = nullptr;

  // Each log record, as data (the operator renders it into its logger with http::SinkTo);
  // default: http::LogToStderr.
  http::LogSink log;
};

struct Route {
  std::string path;  // exact, e.g. "/validate-vmim"
  Admitter admit;
  // The members of the review's object `admit` reads (null: all); not owned, outlives the
  // server.
  const ObjectReads* reads = nullptr;
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

  // Keeps serving, each answer closing its connection (http::Server::Drain): before Stop() when
  // the replica goes away, so clients' pooled connections retire between requests. Idempotent.
  void Drain();

  // Stops accepting, lets requests in flight finish, joins every thread. Idempotent.
  void Stop();

  // Serving with a certificate loaded (and the client CA bundle, when one is configured).
  bool Ready() const;

  // The bound port (useful with port 0); 0 before Start().
  int port() const;

  // Connections open now.
  size_t open_connections() const;

  // Reviews decided on an I/O thread, and those whose attempt there would have waited and
  // went to the workers, since Start() (see the banner).
  size_t answered_inline() const;
  size_t deferred_to_workers() const;

  // The estimated bytes of decoded reviews kept now for the workers (max_kept_review_bytes).
  size_t kept_review_bytes() const;

  // Checks the certificate files now instead of waiting for the next poll; returns whether
  // a new pair is being served.
  bool ReloadCertificate();

 private:
  void Log(const ServerLogEntry& entry) const;
  // One admission request: read and decided, or decided from what its attempt on the I/O
  // thread kept (see max_kept_review_bytes).
  ShellAnswer Serve(const http::Request& req, const Admitter& admit, const ObjectReads* reads);
  void ReloadClientCa();
  void PollCertificate();
  base::Clock& clock() const { return options_.clock ? *options_.clock : base::SystemClock(); }

  ServerOptions options_;
  std::vector<Route> routes_;
  std::unique_ptr<ServingCertificate> cert_;
  std::unique_ptr<ClientCertificateAuthority> client_ca_;  // null: no client certificates
  std::string last_client_ca_failure_;                     // guarded by log_mu_
  // Bytes of the decoded reviews kept for the workers; shared with each kept review, which
  // gives its bytes back when it goes.
  std::shared_ptr<std::atomic<size_t>> kept_bytes_ = std::make_shared<std::atomic<size_t>>(0);
  std::unique_ptr<http::Server> http_;
  std::atomic<bool> serving_{false};
  std::mutex log_mu_;
  std::string last_failure_;  // guarded by log_mu_
  // Rejected (non-200) answers are logged at most once per second, with how many were not
  // logged since (anyone who reaches the port can cause them; the counts are in
  // controller_runtime_webhook_requests_total{code}).
  base::SteadyTime last_rejection_log_{};  // guarded by log_mu_
  size_t rejections_unlogged_ = 0;         // guarded by log_mu_
  void LogRejection(const std::string& path, int status);
  std::thread poll_thread_;
  std::mutex poll_mu_;
  std::condition_variable poll_cv_;
  bool stopping_ = false;                    // guarded by poll_mu_
  bool poll_due_ = false;                    // guarded by poll_mu_: the poll timer fired
  std::optional<base::TimerId> poll_timer_;  // guarded by poll_mu_: pending, or firing
  bool started_ = false;
};

}  // namespace kmt::webhook
