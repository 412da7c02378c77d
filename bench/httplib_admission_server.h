// bench/httplib_admission_server.h — floor (b) of the webhook benchmark: the operator's
// admission server before the Boost.Asio one (http/server.h), a bench-only copy of
// webhook/server.{h,cc} as of commit 5b1863e (cpp-httplib's SSLServer, a fixed pool of 8 workers
// each owning a connection, read/write timeouts, keep-alive 5 s / 100 requests, body cap 7 MiB →
// 413, the strict shell of webhook/shell.h), serving the same routes as the server that replaces
// it, so the table shows before and after in one run.
//
// Differences from the original, none on the request path: the certificate is loaded once
// at construction (no hot-reload poller), logging is gone, and there is no /readyz.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "webhook/admission.h"
#include "webhook/server.h"

namespace httplib {
class SSLServer;
}  // namespace httplib

namespace kmt::bench {

struct HttplibServerOptions {
  std::string address = "127.0.0.1";
  int port = 0;  // 0: any free port (see port())
  std::string cert_file;
  std::string key_file;

  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::seconds keep_alive_timeout{5};
  size_t keep_alive_max_requests = 100;
  size_t workers = 8;
  size_t max_queued_connections = 64;
  size_t max_body_bytes = size_t{7} * 1024 * 1024;
};

class HttplibAdmissionServer {
 public:
  // Throws std::runtime_error when the TLS context or the certificate cannot be set up.
  HttplibAdmissionServer(HttplibServerOptions options, std::vector<webhook::Route> routes);
  ~HttplibAdmissionServer();  // Stop()
  HttplibAdmissionServer(const HttplibAdmissionServer&) = delete;
  HttplibAdmissionServer& operator=(const HttplibAdmissionServer&) = delete;

  // Binds and starts serving. Throws std::runtime_error when the address cannot be bound.
  void Start();
  // Stops accepting, lets requests in flight finish, joins every thread. Idempotent.
  void Stop();
  // The bound port; 0 before Start().
  int port() const { return port_.load(); }

 private:
  HttplibServerOptions options_;
  std::vector<webhook::Route> routes_;
  std::unique_ptr<httplib::SSLServer> http_;
  std::atomic<int> port_{0};
  std::atomic<bool> listen_returned_{false};
  std::thread listen_thread_;
  bool started_ = false;
};

}  // namespace kmt::bench
