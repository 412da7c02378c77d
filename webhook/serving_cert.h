// webhook/serving_cert.h — the certificate and key the admission server presents,
// reloaded from disk as they rotate (cert-manager rewrites the Secret, the kubelet swaps
// the mounted files), without a restart.
//
// Each TLS handshake takes the pair that is current at that moment (an OpenSSL certificate
// callback installed on the server's SSL_CTX), so a rotation affects only connections made
// after it; established connections and requests in flight keep the certificate they
// started with. A new pair replaces the old one only when it is complete and consistent:
// a rotation caught between the writes of the two files keeps the previous pair until the
// next Reload() sees both halves.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <mutex>
#include <string>

namespace kmt::webhook {

enum class ReloadOutcome {
  kUnchanged,  // same bytes as the last attempt: nothing to do
  kLoaded,     // a new pair is now served
  kFailed,     // unreadable, unparsable or mismatched: the previous pair (if any) stays
};

struct ReloadResult {
  ReloadOutcome outcome;
  std::string message;  // kLoaded: what is served now; kFailed: why not
};

class ServingCertificate {
 public:
  // `cert_file`: PEM, the leaf first, then any intermediates (tls.crt). `key_file`: PEM
  // private key (tls.key).
  ServingCertificate(std::string cert_file, std::string key_file);
  ~ServingCertificate();
  ServingCertificate(const ServingCertificate&) = delete;
  ServingCertificate& operator=(const ServingCertificate&) = delete;

  // Reads both files and, when their bytes differ from the previous attempt, parses them,
  // checks that the key belongs to the leaf and swaps the pair in. Thread-safe.
  ReloadResult Reload();

  // A pair has been loaded (and is being served).
  bool Loaded() const;

  // "subject=..., serial=..., notAfter=..." of the served leaf, or "" before the first load.
  std::string Describe() const;

  // Makes every handshake on `ctx` present the current pair; handshakes fail while none is
  // loaded. This object must outlive `ctx`'s connections.
  void AttachTo(SSL_CTX* ctx);

 private:
  struct Pair;
  static int CertificateCallback(SSL* ssl, void* self);
  std::shared_ptr<const Pair> Current() const;

  const std::string cert_file_;
  const std::string key_file_;
  mutable std::mutex mu_;
  std::shared_ptr<const Pair> current_;           // guarded by mu_
  std::string last_cert_bytes_, last_key_bytes_;  // guarded by reload_mu_
  std::mutex reload_mu_;
};

// The certificate authorities whose client certificates a port accepts (mutual TLS, the
// webhook's --webhook-client-ca): a PEM bundle, reloaded as it rotates like the serving pair.
// Each handshake asks the client for a certificate and completes only when the client sends
// one that chains to the bundle current at that moment, for client authentication (the
// extendedKeyUsage clientAuth, when the certificate has that extension). No bundle loaded
// (missing or unparsable file): every handshake fails. The certificate request names no
// acceptable CAs, so a client with one certificate (the API server's kubeconfig entry for
// webhooks) always sends it.
class ClientCertificateAuthority {
 public:
  explicit ClientCertificateAuthority(std::string ca_file);
  ~ClientCertificateAuthority();
  ClientCertificateAuthority(const ClientCertificateAuthority&) = delete;
  ClientCertificateAuthority& operator=(const ClientCertificateAuthority&) = delete;

  // Reads the file and, when its bytes differ from the previous attempt, parses every
  // certificate in it (at least one) and swaps the bundle in. Thread-safe.
  ReloadResult Reload();
  bool Loaded() const;
  const std::string& file() const { return ca_file_; }

  // Makes every handshake on `ctx` require and verify a client certificate against the
  // current bundle. This object must outlive `ctx`'s connections.
  void AttachTo(SSL_CTX* ctx);

 private:
  struct Bundle;
  static int VerifyCallback(X509_STORE_CTX* store_ctx, void* self);
  std::shared_ptr<const Bundle> Current() const;

  const std::string ca_file_;
  mutable std::mutex mu_;
  std::shared_ptr<const Bundle> current_;  // guarded by mu_
  std::string last_bytes_;                 // guarded by reload_mu_
  std::mutex reload_mu_;
};

// Sets up a server context the way every HTTPS port of the operator serves (the webhook and
// /metrics): TLS 1.2 or newer, forward-secret AEAD suites for TLS 1.2, no compression or
// renegotiation, and `cert`'s current pair on every handshake; with `client_ca`, a client
// certificate it verifies is required too. False when OpenSSL refuses.
bool ConfigureServingTls(SSL_CTX* ctx, ServingCertificate& cert,
                         ClientCertificateAuthority* client_ca = nullptr);

}  // namespace kmt::webhook
