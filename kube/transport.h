// kube/transport.h — HTTPS to one API server: TLS setup, connection reuse,
// credentials, rate limiting, response size cap, and the mapping of every
// failure to a KubeError.
//
// TLS: TLS 1.2 or newer; the server certificate is verified by default
// against the configured CA (system roots when none); tls-server-name, when
// set, is used for SNI and for verifying the certificate's name while the
// connection goes to the server's own address (httplib 0.11.4's
// set_hostname_addr_map; the address is resolved once, at construction).
// insecure-skip-tls-verify turns verification off, as kubectl does.
//
// Connections: httplib clients are not thread-safe, so requests take a
// keep-alive connection from a small pool (max_connections) and give it back;
// a connection that failed is dropped. Watches get their own connection.
// A request that fails on a reused keep-alive connection (the server closed it,
// e.g. because it restarted) is retried once on a fresh one when that is safe:
// always if the request could not be written, and after a read failure only
// for GET, PUT (compare-and-swap on resourceVersion), PATCH and DELETE, never
// for POST. Any transport failure empties the idle pool.
// Constructing a Transport sets SIGPIPE to SIG_IGN for the process (OpenSSL
// writes without MSG_NOSIGNAL; a closed peer must fail a request, not kill us).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kube/credentials.h"
#include "kube/error.h"
#include "kube/kubeconfig.h"
#include "kube/rate_limiter.h"

struct x509_store_st;  // OpenSSL's X509_STORE

namespace httplib {
class ClientImpl;
struct Request;
struct Response;
}  // namespace httplib

namespace kmt::kube {

struct TransportOptions {
  std::string user_agent = "kubevirt-migration-target/0.1";
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds read_timeout{30000};
  double qps = 50;  // client-go's defaults are 5/10; an operator needs more
  int burst = 100;
  size_t max_response_bytes = size_t{64} << 20;
  // Events a watch reads ahead of its consumer, in bytes of their lines on the wire
  // (kube/rest_client.h: beyond this the watch stops reading from the socket).
  size_t max_watch_queue_bytes = size_t{1} << 20;
  size_t max_connections = 4;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::optional<std::chrono::seconds> retry_after;
};

// The Retry-After header of an answer in seconds (client-go reads only that form, not an
// HTTP date); nullopt when absent or not a non-negative integer.
std::optional<std::chrono::seconds> RetryAfter(const httplib::Response& res);

class Transport {
 public:
  // Throws KubeError kConfig on unusable TLS material (bad PEM).
  Transport(ClientConfig config, TransportOptions options);
  ~Transport();

  // One request; `what` names it in errors. Returns any HTTP answer (the
  // caller maps non-2xx); throws KubeError for transport failures (kTransport,
  // kTimeout), an oversized answer (kTooLarge) or credentials (kConfig).
  // A 401 invalidates the credentials and retries once.
  HttpResponse Do(const std::string& method, const std::string& path_and_query,
                  const std::string& body, const std::string& content_type,
                  const std::string& what);

  // A dedicated connection for a long-running request (watch), configured
  // like the pooled ones but with the given read timeout.
  std::unique_ptr<httplib::ClientImpl> NewConnection(std::chrono::milliseconds read_timeout);
  // Adds Authorization, User-Agent, Accept and Host headers to a request.
  void Decorate(httplib::Request& req, const Credential& cred) const;
  Credential CurrentCredential() { return credentials_.Get(); }
  void InvalidateCredential() { credentials_.Invalidate(); }
  void WaitForRateLimit() { limiter_.Wait(); }
  // "cannot reach https://host:port: Connection" etc.; a verify_result other than X509_V_OK
  // (from TakeVerifyResult) names why the server's certificate was refused.
  std::string DescribeFailure(int httplib_error, long verify_result) const;
  // Why this thread's last TLS handshake refused the server's certificate (X509_V_OK: it did
  // not), and forgets it. Connections verify the server themselves, during the handshake, so
  // the reason is kept here: read it right after a failed request, on the same thread.
  static long TakeVerifyResult();

  const ClientConfig& config() const { return config_; }
  const TransportOptions& options() const { return options_; }

 private:
  // reused: whether the connection came from the idle pool.
  std::unique_ptr<httplib::ClientImpl> Acquire(const Credential& cred, bool* reused);
  void Release(std::unique_ptr<httplib::ClientImpl> c, const Credential& cred);
  std::unique_ptr<httplib::ClientImpl> Connect(const Credential& cred,
                                               std::chrono::milliseconds read_timeout);

  ClientConfig config_;
  TransportOptions options_;
  CredentialSource credentials_;
  TokenBucket limiter_;
  bool tls_ = true;
  std::string host_;  // from the server URL
  int port_ = 443;
  std::string connect_ip_;  // set when tls-server-name redirects the name
  // The certificate authorities the server's certificate must chain to, shared by every
  // connection (each has its own SSL_CTX): the kubeconfig's, or the system's when it names
  // none. Null with insecure-skip-tls-verify or without TLS.
  std::shared_ptr<x509_store_st> trusted_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<httplib::ClientImpl>> idle_;
  std::string idle_cert_;  // the client certificate the idle connections carry
  size_t in_use_ = 0;
};

}  // namespace kmt::kube
