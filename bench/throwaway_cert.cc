#include "bench/throwaway_cert.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace kmt::bench {

namespace {

void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("throwaway certificate: ") + what + " failed");
}

void AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr, "extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

}  // namespace

CertFiles WriteThrowawayCertificate(const std::string& dir) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), EVP_PKEY_free);
  Check(key != nullptr, "EC key generation");
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
  X509* c = cert.get();
  X509_set_version(c, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c), 1);
  X509_gmtime_adj(X509_getm_notBefore(c), -60);
  X509_gmtime_adj(X509_getm_notAfter(c), 24 * 3600);
  X509_set_pubkey(c, key.get());
  X509_NAME* name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("kmt-bench"), -1, -1, 0);
  X509_set_issuer_name(c, name);
  AddExtension(c, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(c, NID_key_usage, "critical,digitalSignature,keyCertSign");
  AddExtension(c, NID_ext_key_usage, "serverAuth");
  AddExtension(c, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  Check(X509_sign(c, key.get(), EVP_sha256()) > 0, "signing");

  CertFiles files{dir + "/tls.crt", dir + "/tls.key"};
  {
    std::unique_ptr<FILE, FileCloser> f(std::fopen(files.cert_file.c_str(), "w"));
    Check(f != nullptr, "opening tls.crt");
    Check(PEM_write_X509(f.get(), c) == 1, "writing tls.crt");
  }
  {
    std::unique_ptr<FILE, FileCloser> f(std::fopen(files.key_file.c_str(), "w"));
    Check(f != nullptr, "opening tls.key");
    Check(PEM_write_PrivateKey(f.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1,
          "writing tls.key");
  }
  return files;
}

}  // namespace kmt::bench
