#include "http/testing/test_tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace kmt::http::testing {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test TLS setup failed: ") + what);
}

EVP_PKEY* NewKey() {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  Check(key != nullptr, "EC key generation");
  return key;
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr, "extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509* NewCert(long serial, const char* cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
              const char* client_usage = nullptr) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24L * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : cert;
  if (issuer == nullptr) {
    AddExtension(cert, signer, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExtension(cert, signer, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert, signer, NID_key_usage, "critical,digitalSignature");
    if (client_usage != nullptr) {
      AddExtension(cert, signer, NID_ext_key_usage, client_usage);
    } else {
      AddExtension(cert, signer, NID_ext_key_usage, "serverAuth");
      AddExtension(cert, signer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    }
  }
  Check(X509_sign(cert, issuer_key ? issuer_key : key, EVP_sha256()) > 0, "sign");
  return cert;
}

std::string CertPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(len));
  BIO_free(bio);
  return out;
}

std::string KeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(len));
  BIO_free(bio);
  return out;
}

}  // namespace

TestAuthority::TestAuthority() {
  EVP_PKEY* key = NewKey();
  X509* cert = NewCert(1, "kmt-test-ca", key, nullptr, nullptr);
  ca_key_ = key;
  ca_cert_ = cert;
  ca_pem_ = CertPem(cert);
}

TestAuthority::~TestAuthority() {
  EVP_PKEY_free(static_cast<EVP_PKEY*>(ca_key_));
  X509_free(static_cast<X509*>(ca_cert_));
}

PemPair TestAuthority::Issue(long serial) const {
  EVP_PKEY* key = NewKey();
  X509* cert = NewCert(serial, "kmt-webhook", key, static_cast<X509*>(ca_cert_),
                       static_cast<EVP_PKEY*>(ca_key_));
  PemPair pair{CertPem(cert) + ca_pem_, KeyPem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return pair;
}

PemPair TestAuthority::IssueClient(long serial, const std::string& cn,
                                   const std::string& usage) const {
  EVP_PKEY* key = NewKey();
  X509* cert = NewCert(serial, cn.c_str(), key, static_cast<X509*>(ca_cert_),
                       static_cast<EVP_PKEY*>(ca_key_), usage.c_str());
  PemPair pair{CertPem(cert), KeyPem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return pair;
}

void WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    Check(static_cast<bool>(out), "write file");
  }
  Check(std::rename(tmp.c_str(), path.c_str()) == 0, "rename file");
}

ProbeResult Probe(int port, int min_version, int max_version, const std::string& ca_pem) {
  ProbeResult result;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_security_level(ctx, 0);
  SSL_CTX_set_min_proto_version(ctx, min_version);
  SSL_CTX_set_max_proto_version(ctx, max_version);
  SSL_CTX_set_cipher_list(ctx, "ALL:@SECLEVEL=0");
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
  X509_free(ca);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);

  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    result.error = "connect failed";
    close(fd);
    SSL_CTX_free(ctx);
    return result;
  }
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set1_host(ssl, "127.0.0.1");
  ERR_clear_error();
  if (SSL_connect(ssl) == 1) {
    result.connected = true;
    result.version = SSL_get_version(ssl);
    if (X509* peer = SSL_get1_peer_certificate(ssl)) {
      BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(peer), nullptr);
      char* hex = BN_bn2hex(bn);
      result.serial_hex = hex;
      OPENSSL_free(hex);
      BN_free(bn);
      X509_free(peer);
    }
    SSL_shutdown(ssl);
  } else {
    unsigned long code = ERR_peek_last_error();
    result.error_reason = ERR_GET_REASON(code);
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    result.error = buf;
    ERR_clear_error();
  }
  SSL_free(ssl);
  close(fd);
  SSL_CTX_free(ctx);
  return result;
}

std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base ? base : "/tmp") + "/kmt-webhook-XXXXXX";
  Check(mkdtemp(pattern.data()) != nullptr, "mkdtemp");
  return pattern;
}

}  // namespace kmt::http::testing
