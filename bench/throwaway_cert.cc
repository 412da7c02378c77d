// bench/throwaway_cert.cc
#include "bench/throwaway_cert.h"

#include <chrono>
#include <fstream>
#include <stdexcept>

#include "base/clock.h"
#include "webhook/certs/self_signed.h"

namespace kmt::bench {
namespace {

void Write(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) throw std::runtime_error("throwaway certificate: writing " + path + " failed");
}

}  // namespace

CertFiles WriteThrowawayCertificate(const std::string& dir) {
  const auto now = base::SystemClock().WallNow() - std::chrono::minutes(1);
  const webhook::certs::KeyPair ca =
      webhook::certs::MakeCa("kmt-bench-ca", now, std::chrono::hours(24));
  const webhook::certs::KeyPair serving =
      webhook::certs::MakeServing(ca, {"127.0.0.1", "localhost"}, now, std::chrono::hours(24));
  CertFiles files{dir + "/tls.crt", dir + "/tls.key", dir + "/ca.crt"};
  Write(files.cert_file, serving.cert_pem);
  Write(files.key_file, serving.key_pem);
  Write(files.ca_file, ca.cert_pem);
  return files;
}

}  // namespace kmt::bench
