// bench/throwaway_cert.h — a serving certificate for 127.0.0.1 and localhost, for webhook
// servers started inside a benchmark: a private CA and a leaf made by the operator's own
// webhook::certs (the same code that makes its self-managed certificates).
#pragma once

#include <string>

namespace kmt::bench {

struct CertFiles {
  std::string cert_file;  // PEM, the serving certificate
  std::string key_file;
  std::string ca_file;  // PEM, the CA clients verify the server against
};

// Writes tls.crt, tls.key and ca.crt into `dir` (which must exist). Throws
// std::runtime_error when the files cannot be written.
CertFiles WriteThrowawayCertificate(const std::string& dir);

}  // namespace kmt::bench
