#include "webhook/server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/ssl.h>

#include <cctype>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <utility>

#include "webhook/serving_cert.h"
#include "webhook/worker_pool.h"

namespace kmt::webhook {
namespace {

// TLS 1.2 suites: forward secret AEADs only (TLS 1.3 suites are OpenSSL's defaults, all
// AEAD). Matches what Go's crypto/tls, the API server's client, offers first.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// An httplib route pattern (a std::regex) matching exactly `path`.
std::string ExactPattern(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '/' && c != '-' && c != '_') {
      out += '\\';
    }
    out += c;
  }
  return out;
}

}  // namespace

AdmissionServer::AdmissionServer(ServerOptions options, std::vector<Route> routes)
    : options_(std::move(options)),
      routes_(std::move(routes)),
      cert_(std::make_unique<ServingCertificate>(options_.cert_file, options_.key_file)) {
  http_ = std::make_unique<httplib::SSLServer>([this](SSL_CTX& ctx) {
    SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                  SSL_OP_CIPHER_SERVER_PREFERENCE |
                                  SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return false;
    if (SSL_CTX_set_cipher_list(&ctx, kTls12Ciphers) != 1) return false;
    cert_->AttachTo(&ctx);
    return true;
  });

  const auto ms = [](std::chrono::milliseconds d) {
    return std::pair<time_t, time_t>(static_cast<time_t>(d.count() / 1000),
                                     static_cast<time_t>((d.count() % 1000) * 1000));
  };
  auto [read_s, read_us] = ms(options_.read_timeout);
  auto [write_s, write_us] = ms(options_.write_timeout);
  http_->set_read_timeout(read_s, read_us);
  http_->set_write_timeout(write_s, write_us);
  http_->set_keep_alive_timeout(static_cast<time_t>(options_.keep_alive_timeout.count()));
  http_->set_keep_alive_max_count(std::max<size_t>(options_.keep_alive_max_requests, 1));
  http_->set_payload_max_length(options_.max_body_bytes);
  // httplib writes the response head and body separately; without this, Nagle holds the
  // body back for the client's delayed ACK (~40 ms) on every keep-alive request.
  http_->set_tcp_nodelay(true);
  http_->new_task_queue = [workers = options_.workers, queued = options_.max_queued_connections] {
    return new WorkerPool(workers, queued);
  };

  http_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  http_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (Ready()) {
      res.set_content("ok", "text/plain");
    } else {
      res.status = 503;
      res.set_content("no serving certificate loaded", "text/plain");
    }
  });

  for (const Route& route : routes_) {
    const Admitter* admit = &route.admit;
    const std::string path = route.path;
    http_->Post(ExactPattern(route.path), [this, admit, path](const httplib::Request& req,
                                                              httplib::Response& res,
                                                              const httplib::ContentReader& read) {
      const size_t max = options_.max_body_bytes;
      std::string body;
      bool too_large = false;
      bool read_ok = read([&](const char* data, size_t n) {
        if (body.size() + n > max) {
          too_large = true;
          return false;
        }
        body.append(data, n);
        return true;
      });
      if (too_large || res.status == 413) {
        res.status = 413;
        // The rest of the body is still on the wire: do not reuse the connection.
        res.set_header("Connection", "close");
        res.set_content(StatusJson(413, "RequestEntityTooLarge",
                                   fmt::format("request body exceeds {} bytes", max)),
                        "application/json");
        return;
      }
      if (!read_ok) {
        res.status = 400;
        res.set_header("Connection", "close");
        res.set_content(StatusJson(400, "BadRequest", "could not read the request body"),
                        "application/json");
        return;
      }
      ShellAnswer answer = ServeAdmission(req.get_header_value("Content-Type"), body, *admit);
      res.status = answer.http_status;
      if (answer.http_status != 200) {
        Log({false, "Rejected admission request",
             {{"path", path}, {"status", std::to_string(answer.http_status)}}});
      }
      res.set_content(answer.body, "application/json");
    });
  }
}

AdmissionServer::~AdmissionServer() { Stop(); }

void AdmissionServer::Log(ServerLogEntry entry) const {
  if (options_.log) {
    options_.log(entry);
    return;
  }
  std::string line = std::string(entry.error ? "error: " : "") + entry.msg;
  for (const auto& [k, v] : entry.fields) line += " " + k + "=" + v;
  std::cerr << line << '\n';
}

bool AdmissionServer::ReloadCertificate() {
  ReloadResult r = cert_->Reload();
  switch (r.outcome) {
    case ReloadOutcome::kLoaded: {
      std::lock_guard<std::mutex> lock(log_mu_);
      last_failure_.clear();
      Log({false, "Loaded serving certificate",
           {{"cert", options_.cert_file}, {"certificate", r.message}}});
      return true;
    }
    case ReloadOutcome::kFailed: {
      // Once per distinct failure: a missing file is seen again on every poll.
      std::lock_guard<std::mutex> lock(log_mu_);
      if (r.message == last_failure_) return false;
      last_failure_ = r.message;
      Log({true, "Failed to load serving certificate",
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
  if (!http_->is_valid()) throw std::runtime_error("cannot set up the TLS context");
  ReloadCertificate();

  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.address);
  } else if (!http_->bind_to_port(options_.address, port)) {
    port = -1;
  }
  if (port <= 0) {
    throw std::runtime_error(
        fmt::format("cannot listen on {}:{}", options_.address, options_.port));
  }
  port_ = port;

  listen_thread_ = std::thread([this] {
    http_->listen_after_bind();
    listen_returned_ = true;
  });
  // Stop() may only stop a running listener; wait the few instructions until it runs.
  while (!http_->is_running() && !listen_returned_) std::this_thread::yield();
  if (listen_returned_) {
    listen_thread_.join();
    throw std::runtime_error("the admission server's listener exited at start");
  }
  serving_ = true;
  poll_thread_ = std::thread([this] { PollCertificate(); });
  Log({false, "Started admission server",
       {{"address", options_.address}, {"port", std::to_string(port)}}});
}

void AdmissionServer::PollCertificate() {
  std::unique_lock<std::mutex> lock(poll_mu_);
  while (!stopping_) {
    poll_cv_.wait_for(lock, options_.cert_poll_interval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    ReloadCertificate();
    lock.lock();
  }
}

void AdmissionServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(poll_mu_);
    stopping_ = true;
  }
  poll_cv_.notify_all();
  if (poll_thread_.joinable()) poll_thread_.join();
  if (http_) http_->stop();
  if (listen_thread_.joinable()) {
    listen_thread_.join();
    Log({false, "Stopped admission server", {{"port", std::to_string(port_.load())}}});
  }
  serving_ = false;
}

bool AdmissionServer::Ready() const { return serving_ && cert_->Loaded(); }

}  // namespace kmt::webhook
