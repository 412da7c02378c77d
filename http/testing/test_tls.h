// http/testing/test_tls.h — certificates and raw TLS probes for the server tests,
// made with the OpenSSL API (no openssl CLI, nothing on disk unless asked).
#pragma once

#include <string>

namespace kmt::http::testing {

struct PemPair {
  std::string cert;  // leaf, then the issuing CA (a chain as cert-manager writes tls.crt)
  std::string key;
};

// A throwaway CA (EC P-256) that issues serving certificates for 127.0.0.1 and localhost.
class TestAuthority {
 public:
  TestAuthority();
  ~TestAuthority();
  TestAuthority(const TestAuthority&) = delete;
  TestAuthority& operator=(const TestAuthority&) = delete;

  const std::string& ca_pem() const { return ca_pem_; }

  // A leaf with this serial number (shown by Probe as upper-case hex), valid for a day.
  PemPair Issue(long serial) const;
  // A client certificate (extendedKeyUsage `usage`, clientAuth by default) for `cn`.
  PemPair IssueClient(long serial, const std::string& cn,
                      const std::string& usage = "clientAuth") const;

 private:
  void* ca_key_;   // EVP_PKEY*
  void* ca_cert_;  // X509*
  std::string ca_pem_;
};

// Writes `content` to `path` atomically (temporary file + rename), as the kubelet swaps
// a mounted Secret.
void WriteFileAtomically(const std::string& path, const std::string& content);

struct ProbeResult {
  bool connected = false;          // TLS handshake completed
  std::string error;               // OpenSSL's reason when it did not
  unsigned long error_reason = 0;  // ERR_GET_REASON of the failure (e.g. protocol version)
  std::string serial_hex;          // the served leaf's serial
  std::string version;             // "TLSv1.2", "TLSv1.3"
};

// One TLS handshake with 127.0.0.1:port offering only versions in [min_version,
// max_version] (OpenSSL's TLS1_1_VERSION, ...), verifying the server against `ca_pem`.
// Security level 0 so the client can offer old versions at all: a refusal then comes from
// the server.
ProbeResult Probe(int port, int min_version, int max_version, const std::string& ca_pem);

// A fresh empty directory under TEST_TMPDIR (or /tmp).
std::string MakeTempDir();

}  // namespace kmt::http::testing
