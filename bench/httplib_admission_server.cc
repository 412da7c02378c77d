#include "bench/httplib_admission_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/ssl.h>

#include <cctype>
#include <stdexcept>
#include <utility>

#include "bench/httplib_worker_pool.h"
#include "webhook/shell.h"

namespace kmt::bench {
namespace {

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

HttplibAdmissionServer::HttplibAdmissionServer(HttplibServerOptions options,
                                               std::vector<webhook::Route> routes)
    : options_(std::move(options)), routes_(std::move(routes)) {
  http_ = std::make_unique<httplib::SSLServer>([this](SSL_CTX& ctx) {
    SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                  SSL_OP_CIPHER_SERVER_PREFERENCE |
                                  SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return false;
    if (SSL_CTX_set_cipher_list(&ctx, kTls12Ciphers) != 1) return false;
    return SSL_CTX_use_certificate_chain_file(&ctx, options_.cert_file.c_str()) == 1 &&
           SSL_CTX_use_PrivateKey_file(&ctx, options_.key_file.c_str(), SSL_FILETYPE_PEM) == 1;
  });
  if (!http_->is_valid()) {
    throw std::runtime_error("httplib admission server: cannot set up TLS with " +
                             options_.cert_file);
  }

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
  http_->set_tcp_nodelay(true);
  http_->new_task_queue = [workers = options_.workers, queued = options_.max_queued_connections] {
    return new HttplibWorkerPool(workers, queued);
  };

  http_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });

  for (const webhook::Route& route : routes_) {
    const webhook::Admitter* admit = &route.admit;
    http_->Post(ExactPattern(route.path), [this, admit](const httplib::Request& req,
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
        res.set_header("Connection", "close");
        res.set_content(webhook::StatusJson(413, "RequestEntityTooLarge",
                                            fmt::format("request body exceeds {} bytes", max)),
                        "application/json");
        return;
      }
      if (!read_ok) {
        res.status = 400;
        res.set_header("Connection", "close");
        res.set_content(webhook::StatusJson(400, "BadRequest", "could not read the request body"),
                        "application/json");
        return;
      }
      webhook::ShellAnswer answer =
          webhook::ServeAdmission(req.get_header_value("Content-Type"), body, *admit);
      res.status = answer.http_status;
      res.set_content(answer.body, "application/json");
    });
  }
}

HttplibAdmissionServer::~HttplibAdmissionServer() { Stop(); }

void HttplibAdmissionServer::Start() {
  if (started_) throw std::logic_error("HttplibAdmissionServer::Start called twice");
  started_ = true;
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
  while (!http_->is_running() && !listen_returned_) std::this_thread::yield();
  if (listen_returned_) {
    listen_thread_.join();
    throw std::runtime_error("the httplib admission server's listener exited at start");
  }
}

void HttplibAdmissionServer::Stop() {
  if (http_) http_->stop();
  if (listen_thread_.joinable()) listen_thread_.join();
}

}  // namespace kmt::bench
