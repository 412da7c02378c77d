// webhook/certs/self_signed.h — a private CA and serving certificates for the
// admission webhook, made with OpenSSL (ECDSA P-256, SHA-256).
//
// The operator's default certificate story (--webhook-cert-mode=self): one CA,
// valid for 10 years, kept in a Secret; serving certificates signed by it, valid
// for 1 year and renewed 30 days before they expire. Renewal keeps the CA, so
// the caBundle in the webhook configurations does not change and replicas
// still serving the previous certificate stay trusted.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace kmt::webhook::certs {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8
};

// A self-signed CA certificate (basicConstraints CA:TRUE, keyUsage keyCertSign).
KeyPair MakeCa(const std::string& common_name, std::chrono::system_clock::time_point not_before,
               std::chrono::hours validity);

// A serving certificate signed by `ca`: subjectAltName = every entry of `hosts`
// (IP addresses become IP SANs, everything else DNS SANs), extendedKeyUsage
// serverAuth. Throws std::runtime_error when `ca` does not parse.
KeyPair MakeServing(const KeyPair& ca, const std::vector<std::string>& hosts,
                    std::chrono::system_clock::time_point not_before, std::chrono::hours validity);

// What the code needs to know about a PEM certificate.
struct CertInfo {
  std::chrono::system_clock::time_point not_after;
  std::vector<std::string> hosts;  // SAN DNS names and IPs, in order
  bool is_ca = false;
};

// nullopt when `cert_pem` is not a parsable certificate.
std::optional<CertInfo> Inspect(const std::string& cert_pem);

// True when `cert_pem` was signed by `ca_pem` and `key_pem` is its private key.
bool Verifies(const std::string& ca_pem, const std::string& cert_pem, const std::string& key_pem);

}  // namespace kmt::webhook::certs
