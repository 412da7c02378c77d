// bench/asio_tls_floor.h — floor (a) of the webhook benchmark: the least an HTTPS admission
// server can cost on this machine.
//
// A minimal Boost.Asio server: asynchronous accept, TLS handshake (the same protocol floor,
// TLS 1.2 suites and certificate as the operator's server), Boost.Beast's HTTP/1.1 parser,
// and for every request on any path a constant AdmissionReview answer allowing it, on
// keep-alive connections. No deadlines, no connection bound, no body cap, no JSON, no
// admitter, no worker pool: everything the real server adds on top shows up as its ratio
// to this one.
//
// `threads` threads run one io_context; each connection runs on its own strand.
#pragma once

#include <memory>
#include <string>

namespace kmt::bench {

class AsioTlsFloor {
 public:
  AsioTlsFloor(const std::string& cert_file, const std::string& key_file, int threads);
  ~AsioTlsFloor();  // Stop()
  AsioTlsFloor(const AsioTlsFloor&) = delete;
  AsioTlsFloor& operator=(const AsioTlsFloor&) = delete;

  // Loads the certificate, binds 127.0.0.1 on a free port and starts the threads. Throws
  // std::runtime_error when the certificate does not load or the port cannot be bound.
  void Start();
  // Stops the threads and closes every connection. Idempotent.
  void Stop();
  // The bound port; 0 before Start().
  int port() const;

  // The body every request is answered with.
  static const std::string& Answer();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kmt::bench
