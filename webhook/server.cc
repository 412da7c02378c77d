#include "webhook/server.h"

#include <fmt/format.h>
#include <openssl/ssl.h>

#include <any>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <utility>

#include "base/blocking.h"
#include "webhook/serving_cert.h"

namespace kmt::webhook {
namespace {

std::string_view StatusReason(int status) {
  switch (status) {
    case 400:
      return "BadRequest";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 413:
      return "RequestEntityTooLarge";
    case 431:
      return "RequestHeaderFieldsTooLarge";
    case 503:
      return "ServiceUnavailable";
    default:
      return "InternalError";
  }
}

http::Response Answer(int status, std::string content_type, std::string body) {
  http::Response r;
  r.status = status;
  r.content_type = std::move(content_type);
  r.body = std::move(body);
  return r;
}

http::Response JsonAnswer(int status, std::string body) {
  return Answer(status, "application/json", std::move(body));
}

http::Response TextAnswer(int status, std::string body) {
  return Answer(status, "text/plain", std::move(body));
}

// A review decoded on the I/O thread and kept for the worker that decides it (see
// ServerOptions::max_kept_review_bytes); gives its bytes back to the budget when it goes.
struct KeptReview {
  KeptReview(ReadResult r, size_t b, std::shared_ptr<std::atomic<size_t>> budget)
      : review(std::move(r)), bytes(b), kept_bytes(std::move(budget)) {}
  ~KeptReview() { kept_bytes->fetch_sub(bytes, std::memory_order_relaxed); }
  KeptReview(const KeptReview&) = delete;
  KeptReview& operator=(const KeptReview&) = delete;

  const ReadResult review;
  const size_t bytes;
  const std::shared_ptr<std::atomic<size_t>> kept_bytes;
};
using KeptReviewPtr = std::shared_ptr<const KeptReview>;

// Takes `bytes` from `budget` unless that would pass `limit`.
bool Reserve(std::atomic<size_t>& budget, size_t bytes, size_t limit) {
  size_t held = budget.load(std::memory_order_relaxed);
  do {
    if (bytes > limit || held > limit - bytes) return false;
  } while (!budget.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  return true;
}

}  // namespace

AdmissionServer::AdmissionServer(ServerOptions options, std::vector<Route> routes)
    : options_(std::move(options)),
      routes_(std::move(routes)),
      cert_(std::make_unique<ServingCertificate>(options_.cert_file, options_.key_file)) {
  if (!options_.client_ca_file.empty()) {
    client_ca_ = std::make_unique<ClientCertificateAuthority>(options_.client_ca_file);
  }
  http::ServerConfig c;
  c.address = options_.address;
  c.port = options_.port;
  c.limits = options_.limits;
  c.max_body_bytes = options_.max_body_bytes;
  c.max_held_body_bytes = options_.max_held_body_bytes;
  c.io_threads = options_.io_threads;
  c.handler_threads = options_.workers;
  c.handler_queue = options_.max_queued_reviews;
  c.observer = options_.observer;
  c.log = [this](const http::LogRecord& rec) { Log(rec); };
  c.configure_tls = [this](SSL_CTX* ctx) {
    return ConfigureServingTls(ctx, *cert_, client_ca_.get());
  };
  c.error_body = [](int status, std::string_view message) {
    return JsonAnswer(status, StatusJson(status, StatusReason(status), message));
  };

  std::vector<http::Route> hr;
  hr.emplace_back(
      "GET", "/healthz", [](const http::Request&) { return TextAnswer(200, "ok"); },
      /*inline_handler=*/true, "");
  hr.emplace_back(
      "GET", "/readyz",
      [this](const http::Request&) {
        return Ready() ? TextAnswer(200, "ok") : TextAnswer(503, "no serving certificate loaded");
      },
      /*inline_handler=*/true, "");
  for (const Route& route : routes_) {
    const Admitter* admit = &route.admit;
    const ObjectReads* reads = route.reads;
    const std::string path = route.path;
    hr.emplace_back(
        "POST", route.path,
        [this, admit, reads, path](const http::Request& req) {
          ShellAnswer answer = Serve(req, *admit, reads);
          if (answer.http_status != 200) LogRejection(path, answer.http_status);
          return JsonAnswer(answer.http_status, std::move(answer.body));
        },
        /*inline_handler=*/false,
        /*metric_label=*/route.path);
    hr.back().try_inline_max_body = options_.inline_max_body_bytes;
  }
  http_ = std::make_unique<http::Server>(std::move(c), std::move(hr));
}

AdmissionServer::~AdmissionServer() { Stop(); }

ShellAnswer AdmissionServer::Serve(const http::Request& req, const Admitter& admit,
                                   const ObjectReads* reads) {
  if (const auto* kept = std::any_cast<KeptReviewPtr>(&req.carried)) {
    return DecideReview((*kept)->review, admit);  // the worker's run of a deferred review
  }
  ReadResult review = ReadReview(req.content_type, req.body, reads);
  try {
    return DecideReview(review, admit);
  } catch (const base::WouldBlock&) {
    // The attempt on the I/O thread would wait: its worker decides from this review, kept
    // only within the budget (a queued review otherwise holds just its body).
    const size_t bytes = req.body.size() + 64 * review.json_nodes;
    if (Reserve(*kept_bytes_, bytes, options_.max_kept_review_bytes)) {
      req.carried =
          KeptReviewPtr(std::make_shared<const KeptReview>(std::move(review), bytes, kept_bytes_));
    }
    throw;
  }
}

size_t AdmissionServer::kept_review_bytes() const {
  return kept_bytes_->load(std::memory_order_relaxed);
}

void AdmissionServer::LogRejection(const std::string& path, int status) {
  size_t unlogged = 0;
  {
    std::scoped_lock lock(log_mu_);
    const auto now = clock().Now();
    if (now - last_rejection_log_ < std::chrono::seconds(1)) {
      ++rejections_unlogged_;
      return;
    }
    last_rejection_log_ = now;
    unlogged = rejections_unlogged_;
    rejections_unlogged_ = 0;
  }
  Log({false,
       "Rejected admission request",
       {{"path", path},
        {"status", std::to_string(status)},
        {"rejectedUnloggedSinceLast", std::to_string(unlogged)}}});
}

void AdmissionServer::Log(const ServerLogEntry& entry) const {
  (options_.log ? options_.log : http::LogToStderr)(entry);
}

void AdmissionServer::ReloadClientCa() {
  if (!client_ca_) return;
  ReloadResult r = client_ca_->Reload();
  std::scoped_lock lock(log_mu_);
  if (r.outcome == ReloadOutcome::kLoaded) {
    last_client_ca_failure_.clear();
    Log({false, "Loaded client CA", {{"file", client_ca_->file()}, {"ca", r.message}}});
  } else if (r.outcome == ReloadOutcome::kFailed && r.message != last_client_ca_failure_) {
    last_client_ca_failure_ = r.message;  // once per distinct failure
    Log({true, "Failed to load client CA", {{"file", client_ca_->file()}, {"error", r.message}}});
  }
}

bool AdmissionServer::ReloadCertificate() {
  ReloadClientCa();
  ReloadResult r = cert_->Reload();
  switch (r.outcome) {
    case ReloadOutcome::kLoaded: {
      std::scoped_lock lock(log_mu_);
      last_failure_.clear();
      Log({false,
           "Loaded serving certificate",
           {{"cert", options_.cert_file}, {"certificate", r.message}}});
      return true;
    }
    case ReloadOutcome::kFailed: {
      // Once per distinct failure: a missing file is seen again on every poll.
      std::scoped_lock lock(log_mu_);
      if (r.message == last_failure_) return false;
      last_failure_ = r.message;
      Log({true,
           "Failed to load serving certificate",
           {{"cert", options_.cert_file}, {"error", r.message}}});
      return false;
    }
    case ReloadOutcome::kUnchanged:
      return false;
  }
  return false;
}

void AdmissionServer::Start() {
  if (started_) throw std::logic_error("AdmissionServer::Start called twice");
  started_ = true;
  ReloadCertificate();
  http_->Start();  // throws when it cannot bind or set up TLS
  serving_ = true;
  poll_thread_ = std::thread([this] { PollCertificate(); });
  Log({false,
       "Started admission server",
       {{"address", options_.address}, {"port", std::to_string(http_->port())}}});
}

// The wait is a timer on the clock that marks the poll due (its callback must not block the
// clock's thread); this thread reloads.
void AdmissionServer::PollCertificate() {
  std::unique_lock<std::mutex> lock(poll_mu_);
  while (!stopping_) {
    poll_due_ = false;
    poll_timer_ = clock().RunAfter(options_.cert_poll_interval, [this] {
      std::scoped_lock l(poll_mu_);
      poll_timer_.reset();
      poll_due_ = true;
      poll_cv_.notify_all();
    });
    poll_cv_.wait(lock, [this] { return stopping_ || poll_due_; });
    if (stopping_) break;
    lock.unlock();
    ReloadCertificate();
    lock.lock();
  }
  // A timer that could not be cancelled is firing: its callback still reads this object.
  if (poll_timer_ && clock().Cancel(*poll_timer_)) poll_timer_.reset();
  poll_cv_.wait(lock, [this] { return !poll_timer_; });
}

void AdmissionServer::Drain() { http_->Drain(); }

void AdmissionServer::Stop() {
  {
    std::scoped_lock lock(poll_mu_);
    stopping_ = true;
  }
  poll_cv_.notify_all();
  if (poll_thread_.joinable()) poll_thread_.join();
  const bool was_serving = serving_.exchange(false);
  http_->Stop();
  if (was_serving) Log({false, "Stopped admission server", {{"port", std::to_string(port())}}});
}

bool AdmissionServer::Ready() const {
  return serving_ && cert_->Loaded() && (!client_ca_ || client_ca_->Loaded());
}

int AdmissionServer::port() const { return http_->port(); }

size_t AdmissionServer::open_connections() const { return http_->open_connections(); }

size_t AdmissionServer::answered_inline() const { return http_->answered_inline(); }

size_t AdmissionServer::deferred_to_workers() const { return http_->deferred_to_pool(); }

}  // namespace kmt::webhook
