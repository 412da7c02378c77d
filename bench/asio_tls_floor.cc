#include "bench/asio_tls_floor.h"

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace kmt::bench {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;

// The operator's TLS 1.2 suites (webhook/server.cc); TLS 1.3 uses OpenSSL's defaults.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, ssl::context& ctx) : stream_(std::move(socket), ctx) {}

  void Run() {
    error_code ignored;
    stream_.next_layer().set_option(tcp::no_delay(true), ignored);
    stream_.async_handshake(ssl::stream_base::server, [self = shared_from_this()](error_code ec) {
      if (!ec) self->Read();
    });
  }

 private:
  void Read() {
    request_ = {};
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](error_code ec, size_t) {
                       if (!ec) self->Answer();
                     });
  }

  void Answer() {
    response_ = {};
    response_.result(http::status::ok);
    response_.version(request_.version());
    response_.keep_alive(request_.keep_alive());
    response_.set(http::field::content_type, "application/json");
    response_.body() = AsioTlsFloor::Answer();
    response_.prepare_payload();
    http::async_write(stream_, response_, [self = shared_from_this()](error_code ec, size_t) {
      if (!ec && self->response_.keep_alive()) self->Read();
    });
  }

  ssl::stream<tcp::socket> stream_;
  boost::beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

}  // namespace

struct AsioTlsFloor::Impl {
  Impl(std::string cert, std::string key, int n)
      : cert_file(std::move(cert)), key_file(std::move(key)), threads(n < 1 ? 1 : n), io(threads) {}

  void Accept() {
    acceptor.async_accept(net::make_strand(io), [this](error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted) return;
      if (!ec) std::make_shared<Session>(std::move(socket), ctx)->Run();
      Accept();
    });
  }

  std::string cert_file, key_file;
  int threads;
  net::io_context io;
  ssl::context ctx{ssl::context::tls_server};
  tcp::acceptor acceptor{io};
  std::vector<std::thread> runners;
  int port = 0;
};

AsioTlsFloor::AsioTlsFloor(const std::string& cert_file, const std::string& key_file, int threads)
    : impl_(std::make_unique<Impl>(cert_file, key_file, threads)) {}

AsioTlsFloor::~AsioTlsFloor() { Stop(); }

const std::string& AsioTlsFloor::Answer() {
  static const std::string answer =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
      R"("response":{"uid":"floor","allowed":true}})";
  return answer;
}

void AsioTlsFloor::Start() {
  Impl& s = *impl_;
  SSL_CTX* ctx = s.ctx.native_handle();
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1 ||
      SSL_CTX_use_certificate_chain_file(ctx, s.cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, s.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    throw std::runtime_error("asio TLS floor: cannot set up TLS with " + s.cert_file);
  }
  const tcp::endpoint at(net::ip::make_address("127.0.0.1"), 0);
  s.acceptor.open(at.protocol());
  s.acceptor.set_option(tcp::acceptor::reuse_address(true));
  s.acceptor.bind(at);
  s.acceptor.listen(net::socket_base::max_listen_connections);
  s.port = s.acceptor.local_endpoint().port();
  s.Accept();
  for (int i = 0; i < s.threads; ++i) s.runners.emplace_back([&s] { s.io.run(); });
}

void AsioTlsFloor::Stop() {
  Impl& s = *impl_;
  s.io.stop();
  for (std::thread& t : s.runners) t.join();
  s.runners.clear();
}

int AsioTlsFloor::port() const { return impl_->port; }

}  // namespace kmt::bench
