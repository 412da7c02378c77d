#include "webhook/certs/self_signed.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <stdexcept>

namespace kmt::webhook::certs {
namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("openssl: ") + what + " failed");
}

KeyPtr NewKey() {
  KeyPtr key(EVP_EC_gen("P-256"));
  Check(key != nullptr, "EC key generation");
  return key;
}

std::string CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  Check(PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<size_t>(n)};
}

std::string KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  Check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<size_t>(n)};
}

CertPtr ReadCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return CertPtr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

KeyPtr ReadKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return KeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

void AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

CertPtr NewCert(EVP_PKEY* key, const std::string& cn, std::chrono::system_clock::time_point nb,
                std::chrono::hours validity) {
  CertPtr cert(X509_new());
  Check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  Check(RAND_bytes(serial, sizeof serial) == 1, "RAND_bytes");
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  time_t start = std::chrono::system_clock::to_time_t(nb);
  time_t end = std::chrono::system_clock::to_time_t(nb + validity);
  Check(ASN1_TIME_set(X509_getm_notBefore(cert.get()), start) != nullptr, "notBefore");
  Check(ASN1_TIME_set(X509_getm_notAfter(cert.get()), end) != nullptr, "notAfter");
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

bool IsIp(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

KeyPair MakeCa(const std::string& common_name, std::chrono::system_clock::time_point not_before,
               std::chrono::hours validity) {
  KeyPtr key = NewKey();
  CertPtr cert = NewCert(key.get(), common_name, not_before, validity);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  AddExt(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  AddExt(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
  AddExt(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  Check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "X509_sign (CA)");
  return {CertPem(cert.get()), KeyPem(key.get())};
}

KeyPair MakeServing(const KeyPair& ca, const std::vector<std::string>& hosts,
                    std::chrono::system_clock::time_point not_before, std::chrono::hours validity) {
  CertPtr ca_cert = ReadCert(ca.cert_pem);
  KeyPtr ca_key = ReadKey(ca.key_pem);
  if (!ca_cert || !ca_key) throw std::runtime_error("certificate authority does not parse");
  if (hosts.empty()) throw std::runtime_error("a serving certificate needs at least one host");
  KeyPtr key = NewKey();
  CertPtr cert = NewCert(key.get(), hosts.front(), not_before, validity);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
  std::string san;
  for (const auto& h : hosts) {
    if (!san.empty()) san += ",";
    san += (IsIp(h) ? "IP:" : "DNS:") + h;
  }
  AddExt(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  AddExt(cert.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
  AddExt(cert.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth");
  AddExt(cert.get(), ca_cert.get(), NID_subject_alt_name, san.c_str());
  Check(X509_sign(cert.get(), ca_key.get(), EVP_sha256()) > 0, "X509_sign (serving)");
  return {CertPem(cert.get()), KeyPem(key.get())};
}

std::optional<CertInfo> Inspect(const std::string& cert_pem) {
  CertPtr cert = ReadCert(cert_pem);
  if (!cert) return std::nullopt;
  CertInfo info;
  struct tm tm {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &tm) != 1) return std::nullopt;
  info.not_after = std::chrono::system_clock::from_time_t(timegm(&tm));
  info.is_ca = X509_check_ca(cert.get()) > 0;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
  if (names) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* gn = sk_GENERAL_NAME_value(names, i);
      if (gn->type == GEN_DNS) {
        const auto* s = gn->d.dNSName;
        info.hosts.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                static_cast<size_t>(ASN1_STRING_length(s)));
      } else if (gn->type == GEN_IPADD) {
        const auto* s = gn->d.iPAddress;
        char buf[64] = {0};
        int family = ASN1_STRING_length(s) == 4 ? AF_INET : AF_INET6;
        inet_ntop(family, ASN1_STRING_get0_data(s), buf, sizeof buf);
        info.hosts.emplace_back(buf);
      }
    }
    GENERAL_NAMES_free(names);
  }
  return info;
}

bool Verifies(const std::string& ca_pem, const std::string& cert_pem, const std::string& key_pem) {
  CertPtr ca = ReadCert(ca_pem);
  CertPtr cert = ReadCert(cert_pem);
  KeyPtr key = ReadKey(key_pem);
  if (!ca || !cert || !key) return false;
  KeyPtr ca_pub(X509_get_pubkey(ca.get()));
  if (!ca_pub || X509_verify(cert.get(), ca_pub.get()) != 1) return false;
  return X509_check_private_key(cert.get(), key.get()) == 1;
}

}  // namespace kmt::webhook::certs
