// kube/transport.cc
#include "kube/transport.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>

#include <charconv>
#include <csignal>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>

#include "base/blocking.h"

namespace kmt::kube {
namespace {

[[noreturn]] void ConfigError(const std::string& message) {
  throw KubeError(ErrorKind::kConfig, message);
}

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

// All certificates of a PEM bundle into a new store (httplib takes ownership).
X509_STORE* StoreFromPem(const std::string& pem, const std::string& source) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509_STORE* store = X509_STORE_new();
  int n = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    X509_free(cert);
    ++n;
  }
  ERR_clear_error();  // the loop ends on a "no start line" error
  BIO_free(bio);
  if (n == 0) {
    X509_STORE_free(store);
    ConfigError(fmt::format("{}: certificate authority: no PEM certificate found", source));
  }
  return store;
}

// Why this thread's last handshake refused the server's certificate (Transport::TakeVerifyResult).
thread_local long last_verify_result = X509_V_OK;

// The handshake's check of each certificate of the server's chain: the first failure is kept
// for DescribeFailure and ends the handshake.
int RecordVerify(int ok, X509_STORE_CTX* ctx) {
  if (ok == 0 && last_verify_result == X509_V_OK) {
    last_verify_result = X509_STORE_CTX_get_error(ctx);
  }
  return ok;
}

// The system's certificate authorities (OpenSSL's default file and directory), read once
// per process and shared: parsing the bundle costs ~0.5 MiB of heap per copy.
std::shared_ptr<X509_STORE> SystemStore() {
  static const std::shared_ptr<X509_STORE> store = [] {
    X509_STORE* s = X509_STORE_new();
    if (s == nullptr || X509_STORE_set_default_paths(s) != 1) ERR_clear_error();
    return std::shared_ptr<X509_STORE>(s, X509_STORE_free);
  }();
  return store;
}

// Resolves a host name to a numeric address (httplib's address map wants one).
std::string Resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return host;
  char buf[INET6_ADDRSTRLEN] = {0};
  if (res->ai_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_addr, buf,
              sizeof(buf));
  }
  freeaddrinfo(res);
  return buf;
}

// Reaches ClientImpl's protected socket through a pointer to member (legal for
// any ClientImpl object), so an idle connection can be probed before reuse.
struct SocketAccess : httplib::ClientImpl {
  static constexpr auto kSocket = &SocketAccess::socket_;
};

// An idle keep-alive connection has nothing to read; readable means the
// server closed it (FIN, RST, TLS close_notify), e.g. because it restarted.
bool PeerClosed(const httplib::ClientImpl& c) {
  const auto& socket = c.*SocketAccess::kSocket;
  if (!socket.is_open()) return false;  // will simply reconnect
  pollfd p{socket.sock, POLLIN | POLLRDHUP, 0};
  return poll(&p, 1, 0) != 0;
}

}  // namespace

std::optional<std::chrono::seconds> RetryAfter(const httplib::Response& res) {
  if (!res.has_header("Retry-After")) return std::nullopt;
  const std::string v = res.get_header_value("Retry-After");
  int64_t secs = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), secs);
  if (ec != std::errc() || p != v.data() + v.size() || secs < 0) return std::nullopt;
  return std::chrono::seconds(secs);
}

Transport::Transport(ClientConfig config, TransportOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      credentials_(config_),
      limiter_(options_.qps, options_.burst) {
  // OpenSSL writes to the socket without MSG_NOSIGNAL: a write on a connection
  // the server already closed would kill the process with SIGPIPE instead of
  // failing the request. Process-wide, once.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  std::string rest;
  if (config_.server.starts_with("https://")) {
    rest = config_.server.substr(8);
  } else if (config_.server.starts_with("http://")) {
    tls_ = false;
    port_ = 80;
    rest = config_.server.substr(7);
  } else {
    ConfigError(
        fmt::format("{}: server \"{}\" is not an http(s) URL", config_.source, config_.server));
  }
  rest = rest.substr(0, rest.find('/'));
  // [v6]:port, host:port or host; anything else is the kubeconfig's mistake, not ours.
  const auto bad = [&](std::string_view why) {
    ConfigError(fmt::format("{}: server \"{}\": {}", config_.source, config_.server, why));
  };
  std::string_view port;
  bool has_port = false;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos) bad("unterminated [IPv6 address]");
    host_ = rest.substr(1, close - 1);
    const std::string_view after = std::string_view(rest).substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') bad("unexpected text after the [IPv6 address]");
      has_port = true;
      port = after.substr(1);
    }
  } else if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    host_ = rest.substr(0, colon);
    has_port = true;
    port = std::string_view(rest).substr(colon + 1);
  } else {
    host_ = rest;
  }
  if (host_.empty()) bad("no host");
  if (has_port) {
    int n = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (ec != std::errc() || p != port.data() + port.size() || n < 1 || n > 65535) {
      bad(fmt::format("port \"{}\" is not a number from 1 to 65535", port));
    }
    port_ = n;
  }
  if (tls_ && !config_.tls_server_name.empty() && config_.tls_server_name != host_) {
    connect_ip_ = Resolve(host_);
  }
  // Fail early on unusable PEM rather than on the first request.
  if (tls_ && !config_.insecure_skip_tls_verify) {
    trusted_ = config_.ca_pem.empty()
                   ? SystemStore()
                   : std::shared_ptr<X509_STORE>(StoreFromPem(config_.ca_pem, config_.source),
                                                 X509_STORE_free);
  } else if (!config_.ca_pem.empty()) {
    X509_STORE_free(StoreFromPem(config_.ca_pem, config_.source));
  }
}

long Transport::TakeVerifyResult() { return std::exchange(last_verify_result, X509_V_OK); }

Transport::~Transport() = default;

std::string Transport::DescribeFailure(int httplib_error, long verify_result) const {
  const auto err = static_cast<httplib::Error>(httplib_error);
  switch (err) {
    case httplib::Error::SSLServerVerification:  // httplib's own check, which Connect turns off
    case httplib::Error::SSLConnection: {
      // The handshake refused the certificate (RecordVerify kept why), or failed otherwise.
      const bool name_mismatch = verify_result == X509_V_ERR_HOSTNAME_MISMATCH ||
                                 verify_result == X509_V_ERR_IP_ADDRESS_MISMATCH;
      if (err == httplib::Error::SSLConnection && verify_result == X509_V_OK) {
        return fmt::format("TLS handshake with {} failed", config_.server);
      }
      return fmt::format("TLS verification of {} failed: {}", config_.server,
                         verify_result == X509_V_OK || name_mismatch
                             ? "certificate does not match the host name"
                             : X509_verify_cert_error_string(verify_result));
    }
    case httplib::Error::Connection:
      return fmt::format("cannot connect to {}", config_.server);
    case httplib::Error::ConnectionTimeout:
      return fmt::format("connecting to {} timed out", config_.server);
    case httplib::Error::Read:
      return fmt::format("reading from {} failed (connection closed or read timeout)",
                         config_.server);
    case httplib::Error::Write:
      return fmt::format("writing to {} failed", config_.server);
    default:
      return fmt::format("request to {} failed: {}", config_.server, httplib::to_string(err));
  }
}

std::unique_ptr<httplib::ClientImpl> Transport::Connect(const Credential& cred,
                                                        std::chrono::milliseconds read_timeout) {
  const std::string name = config_.tls_server_name.empty() ? host_ : config_.tls_server_name;
  std::unique_ptr<httplib::ClientImpl> c;
  if (tls_) {
    std::unique_ptr<httplib::SSLClient> ssl;
    if (!cred.client_cert_pem.empty()) {
      BIO* cb = BIO_new_mem_buf(cred.client_cert_pem.data(),
                                static_cast<int>(cred.client_cert_pem.size()));
      X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
      BIO_free(cb);
      BIO* kb =
          BIO_new_mem_buf(cred.client_key_pem.data(), static_cast<int>(cred.client_key_pem.size()));
      EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
      BIO_free(kb);
      if (cert == nullptr || key == nullptr) {
        const std::string why = OpenSslError();
        X509_free(cert);
        EVP_PKEY_free(key);
        ConfigError(fmt::format("{}: client certificate/key: {}", config_.source, why));
      }
      ssl = std::make_unique<httplib::SSLClient>(name, port_, cert, key);
      X509_free(cert);
      EVP_PKEY_free(key);
    } else {
      ssl = std::make_unique<httplib::SSLClient>(name, port_);
    }
    SSL_CTX* ctx = ssl->ssl_context();
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    // The server is verified here, in the handshake, not by httplib: with its verification
    // on, httplib adds the system's certificate authorities to the store of every connection
    // (SSL_CTX_set_default_verify_paths, even after set_ca_cert_store), so a kubeconfig's
    // certificate-authority was not the only one trusted (client-go trusts only it), and
    // each connection parsed the system bundle anew (4.7 of the 6 MiB heap of an idle
    // operator).
    ssl->enable_server_certificate_verification(false);
    if (trusted_) {
      SSL_CTX_set1_cert_store(ctx, trusted_.get());
      // As Go's crypto/tls: the name (or IP address) must be one of the certificate's
      // subject alternative names; the subject's common name is not looked at.
      X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
      X509_VERIFY_PARAM_set_hostflags(
          param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
      if (X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) != 1) {
        ERR_clear_error();
        X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
      }
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, RecordVerify);
    }
    if (!connect_ip_.empty()) ssl->set_hostname_addr_map({{name, connect_ip_}});
    c = std::move(ssl);
  } else {
    c = std::make_unique<httplib::ClientImpl>(host_, port_);
  }
  c->set_keep_alive(true);
  // httplib writes a request's headers and body separately: with Nagle's algorithm the body
  // would wait for the ACK of the headers, which the API server's kernel delays (~40 ms).
  c->set_tcp_nodelay(true);
  c->set_url_encode(false);  // paths and queries are escaped by kube/paths.h
  c->set_connection_timeout(
      std::chrono::duration_cast<std::chrono::microseconds>(options_.connect_timeout));
  c->set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(read_timeout));
  c->set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(read_timeout));
  return c;
}

std::unique_ptr<httplib::ClientImpl> Transport::NewConnection(
    std::chrono::milliseconds read_timeout) {
  base::MayBlock();
  return Connect(credentials_.Get(), read_timeout);
}

void Transport::Decorate(httplib::Request& req, const Credential& cred) const {
  if (!cred.bearer_token.empty()) {
    req.headers.emplace("Authorization", "Bearer " + cred.bearer_token);
  }
  req.headers.emplace("User-Agent", options_.user_agent);
  req.headers.emplace("Accept", "application/json");
  const bool default_port = (tls_ && port_ == 443) || (!tls_ && port_ == 80);
  const std::string host = host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_;
  req.headers.emplace("Host", default_port ? host : fmt::format("{}:{}", host, port_));
}

std::unique_ptr<httplib::ClientImpl> Transport::Acquire(const Credential& cred, bool* reused) {
  std::unique_lock<std::mutex> lock(mu_);
  if (idle_cert_ != cred.client_cert_pem) {
    idle_.clear();  // the client certificate rotated: old connections carry the old one
    idle_cert_ = cred.client_cert_pem;
  }
  cv_.wait(lock, [&] { return !idle_.empty() || in_use_ < options_.max_connections; });
  ++in_use_;
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    if (PeerClosed(*c)) continue;
    *reused = true;
    return c;
  }
  *reused = false;
  lock.unlock();
  try {
    return Connect(cred, options_.read_timeout);
  } catch (...) {
    lock.lock();
    --in_use_;
    cv_.notify_one();
    throw;
  }
}

void Transport::Release(std::unique_ptr<httplib::ClientImpl> c, const Credential& cred) {
  std::scoped_lock lock(mu_);
  --in_use_;
  if (c && cred.client_cert_pem == idle_cert_) idle_.push_back(std::move(c));
  cv_.notify_one();
}

HttpResponse Transport::Do(const std::string& method, const std::string& path_and_query,
                           const std::string& body, const std::string& content_type,
                           const std::string& what) {
  base::MayBlock();  // the rate limiter, a connection and the answer are all waits
  bool retried_stale = false;
  for (int attempt = 0;; ++attempt) {
    if (!retried_stale || attempt == 0) limiter_.Wait();
    const Credential cred = credentials_.Get();
    bool reused = false;
    std::unique_ptr<httplib::ClientImpl> conn = Acquire(cred, &reused);

    httplib::Request req;
    req.method = method;
    req.path = path_and_query;
    Decorate(req, cred);
    if (!content_type.empty()) {
      req.headers.emplace("Content-Type", content_type);
      req.body = body;
    }
    std::string received;
    bool too_large = false;
    const size_t cap = options_.max_response_bytes;
    req.response_handler = [&](const httplib::Response& r) {
      if (r.has_header("Content-Length")) {
        const std::string len = r.get_header_value("Content-Length");
        uint64_t n = 0;
        std::from_chars(len.data(), len.data() + len.size(), n);
        if (n > cap) {
          too_large = true;
          return false;
        }
      }
      return true;
    };
    req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
      if (received.size() + len > cap) {
        too_large = true;
        return false;
      }
      received.append(data, len);
      return true;
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    TakeVerifyResult();  // nothing of an earlier request on this thread
    const bool ok = conn->send(req, res, err);
    const long verify = TakeVerifyResult();
    if (too_large) {
      Release(nullptr, cred);  // the stream is mid-body: drop the connection
      throw KubeError(ErrorKind::kTooLarge,
                      fmt::format("{}: response larger than the {} MiB cap", what, cap >> 20));
    }
    if (!ok) {
      Release(nullptr, cred);
      {
        std::scoped_lock lock(mu_);
        idle_.clear();  // the server likely went away: its other connections are stale too
      }
      const bool safe =
          err == httplib::Error::Write || (err == httplib::Error::Read && method != "POST");
      if (reused && safe && !retried_stale) {
        retried_stale = true;
        continue;
      }
      const ErrorKind kind =
          err == httplib::Error::ConnectionTimeout ? ErrorKind::kTimeout : ErrorKind::kTransport;
      throw KubeError(kind,
                      fmt::format("{}: {}", what, DescribeFailure(static_cast<int>(err), verify)));
    }
    Release(std::move(conn), cred);
    if (res.status == 401 && attempt == 0) {
      credentials_.Invalidate();  // a rotated token or an expired exec credential
      continue;
    }
    HttpResponse out;
    out.status = res.status;
    out.body = received.empty() ? std::move(res.body) : std::move(received);
    out.retry_after = RetryAfter(res);
    return out;
  }
}

}  // namespace kmt::kube
