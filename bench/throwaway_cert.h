// bench/throwaway_cert.h — a self-signed EC P-256 serving certificate for 127.0.0.1 and
// localhost, made with the OpenSSL API, for webhook servers started inside a benchmark.
// The certificate is its own trust anchor: clients load cert_file as their CA file.
#pragma once

#include <string>

namespace kmt::bench {

struct CertFiles {
  std::string cert_file;  // PEM, also the CA file for clients
  std::string key_file;
};

// Writes tls.crt and tls.key into `dir` (which must exist). Throws std::runtime_error when
// OpenSSL fails or the files cannot be written.
CertFiles WriteThrowawayCertificate(const std::string& dir);

}  // namespace kmt::bench
