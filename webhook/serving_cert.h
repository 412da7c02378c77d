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

// Sets up a server context the way every HTTPS port of the operator serves (the webhook and
// /metrics): TLS 1.2 or newer, forward-secret AEAD suites for TLS 1.2, no compression or
// renegotiation, and `cert`'s current pair on every handshake. False when OpenSSL refuses.
bool ConfigureServingTls(SSL_CTX* ctx, ServingCertificate& cert);

}  // namespace kmt::webhook
