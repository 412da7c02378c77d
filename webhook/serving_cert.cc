#include "webhook/serving_cert.h"

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

namespace kmt::webhook {

// One consistent certificate chain and key. Freed when the last handshake using it has
// taken its own references (SSL_use_cert_and_key up-refs what it installs).
struct ServingCertificate::Pair {
  X509* leaf = nullptr;
  STACK_OF(X509) * chain = nullptr;  // intermediates, possibly empty
  EVP_PKEY* key = nullptr;
  std::string description;

  Pair() = default;
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;
  ~Pair() {
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
  }
};

namespace {

std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

// The last OpenSSL error as text (and clears the queue, so the next call starts clean).
std::string OpenSslError() {
  unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof(buf));
  return buf;
}

std::string Name(X509_NAME* name) {
  BIO* bio = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(len));
  BIO_free(bio);
  return out;
}

std::string Describe(X509* cert) {
  std::string serial;
  if (BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr)) {
    char* hex = BN_bn2hex(bn);
    serial = hex;
    OPENSSL_free(hex);
    BN_free(bn);
  }
  std::string not_after;
  BIO* bio = BIO_new(BIO_s_mem());
  if (ASN1_TIME_print(bio, X509_get0_notAfter(cert)) == 1) {
    char* data = nullptr;
    long len = BIO_get_mem_data(bio, &data);
    not_after.assign(data, static_cast<size_t>(len));
  }
  BIO_free(bio);
  return fmt::format("subject={}, serial={}, notAfter={}", Name(X509_get_subject_name(cert)),
                     serial, not_after);
}

}  // namespace

ServingCertificate::ServingCertificate(std::string cert_file, std::string key_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)) {}

ServingCertificate::~ServingCertificate() = default;

ReloadResult ServingCertificate::Reload() {
  std::scoped_lock reload_lock(reload_mu_);
  auto cert_bytes = ReadWholeFile(cert_file_);
  if (!cert_bytes) {
    return {ReloadOutcome::kFailed, fmt::format("cannot read certificate file {}", cert_file_)};
  }
  auto key_bytes = ReadWholeFile(key_file_);
  if (!key_bytes) {
    return {ReloadOutcome::kFailed, fmt::format("cannot read key file {}", key_file_)};
  }
  if (*cert_bytes == last_cert_bytes_ && *key_bytes == last_key_bytes_) {
    return {ReloadOutcome::kUnchanged, {}};
  }
  // Remember the attempt even if it fails: the same broken bytes are not parsed (and
  // reported) again on every poll, and a later fix is seen as a change.
  last_cert_bytes_ = *cert_bytes;
  last_key_bytes_ = *key_bytes;

  ERR_clear_error();
  auto pair = std::make_shared<Pair>();
  BIO* cert_bio = BIO_new_mem_buf(cert_bytes->data(), static_cast<int>(cert_bytes->size()));
  pair->leaf = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  if (pair->leaf == nullptr) {
    BIO_free(cert_bio);
    return {ReloadOutcome::kFailed,
            fmt::format("no PEM certificate in {}: {}", cert_file_, OpenSslError())};
  }
  pair->chain = sk_X509_new_null();
  while (X509* extra = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr)) {
    sk_X509_push(pair->chain, extra);
  }
  ERR_clear_error();  // the loop ends on "no start line": expected
  BIO_free(cert_bio);

  BIO* key_bio = BIO_new_mem_buf(key_bytes->data(), static_cast<int>(key_bytes->size()));
  pair->key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  if (pair->key == nullptr) {
    return {ReloadOutcome::kFailed,
            fmt::format("no PEM private key in {}: {}", key_file_, OpenSslError())};
  }
  if (X509_check_private_key(pair->leaf, pair->key) != 1) {
    ERR_clear_error();
    return {ReloadOutcome::kFailed,
            fmt::format("the key in {} does not belong to the certificate in {}", key_file_,
                        cert_file_)};
  }
  pair->description = webhook::Describe(pair->leaf);
  std::string message = pair->description;
  {
    std::scoped_lock lock(mu_);
    current_ = std::move(pair);
  }
  return {ReloadOutcome::kLoaded, std::move(message)};
}

bool ServingCertificate::Loaded() const { return Current() != nullptr; }

std::string ServingCertificate::Describe() const {
  auto pair = Current();
  return pair ? pair->description : std::string();
}

std::shared_ptr<const ServingCertificate::Pair> ServingCertificate::Current() const {
  std::scoped_lock lock(mu_);
  return current_;
}

void ServingCertificate::AttachTo(SSL_CTX* ctx) {
  SSL_CTX_set_cert_cb(ctx, &ServingCertificate::CertificateCallback, this);
}

namespace {

// TLS 1.2 suites: forward secret AEADs only (TLS 1.3 suites are OpenSSL's defaults, all
// AEAD). Matches what Go's crypto/tls, the API server's client, offers first.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

}  // namespace

// One parsed CA bundle: a store of its certificates (X509_STORE is safe to verify against
// from several threads at once).
struct ClientCertificateAuthority::Bundle {
  X509_STORE* store = nullptr;
  size_t count = 0;
  std::string description;

  Bundle() = default;
  Bundle(const Bundle&) = delete;
  Bundle& operator=(const Bundle&) = delete;
  ~Bundle() { X509_STORE_free(store); }
};

ClientCertificateAuthority::ClientCertificateAuthority(std::string ca_file)
    : ca_file_(std::move(ca_file)) {}

ClientCertificateAuthority::~ClientCertificateAuthority() = default;

ReloadResult ClientCertificateAuthority::Reload() {
  std::scoped_lock reload_lock(reload_mu_);
  auto bytes = ReadWholeFile(ca_file_);
  if (!bytes) {
    return {ReloadOutcome::kFailed, fmt::format("cannot read client CA file {}", ca_file_)};
  }
  if (*bytes == last_bytes_) return {ReloadOutcome::kUnchanged, {}};
  last_bytes_ = *bytes;

  ERR_clear_error();
  auto bundle = std::make_shared<Bundle>();
  bundle->store = X509_STORE_new();
  BIO* bio = BIO_new_mem_buf(bytes->data(), static_cast<int>(bytes->size()));
  std::string subjects;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    const bool added = X509_STORE_add_cert(bundle->store, cert) == 1;
    if (added) {
      ++bundle->count;
      subjects += (subjects.empty() ? "" : "; ") + Name(X509_get_subject_name(cert));
    }
    X509_free(cert);
  }
  ERR_clear_error();  // the loop ends on "no start line": expected
  BIO_free(bio);
  if (bundle->count == 0) {
    return {ReloadOutcome::kFailed, fmt::format("no PEM certificate in {}", ca_file_)};
  }
  bundle->description = fmt::format("{} CA certificate{}: {}", bundle->count,
                                    bundle->count == 1 ? "" : "s", subjects);
  std::string message = bundle->description;
  {
    std::scoped_lock lock(mu_);
    current_ = std::move(bundle);
  }
  return {ReloadOutcome::kLoaded, std::move(message)};
}

bool ClientCertificateAuthority::Loaded() const { return Current() != nullptr; }

std::shared_ptr<const ClientCertificateAuthority::Bundle> ClientCertificateAuthority::Current()
    const {
  std::scoped_lock lock(mu_);
  return current_;
}

void ClientCertificateAuthority::AttachTo(SSL_CTX* ctx) {
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  SSL_CTX_set_cert_verify_callback(ctx, &ClientCertificateAuthority::VerifyCallback, this);
}

// Replaces OpenSSL's chain building for client certificates: the chain the client sent is
// verified against the bundle current now (a rotated bundle applies from the next handshake).
int ClientCertificateAuthority::VerifyCallback(X509_STORE_CTX* store_ctx, void* self) {
  auto bundle = static_cast<ClientCertificateAuthority*>(self)->Current();
  if (!bundle) {
    X509_STORE_CTX_set_error(store_ctx, X509_V_ERR_UNSPECIFIED);
    return 0;
  }
  X509_STORE_CTX* verify = X509_STORE_CTX_new();
  if (verify == nullptr) {
    X509_STORE_CTX_set_error(store_ctx, X509_V_ERR_OUT_OF_MEM);
    return 0;
  }
  int ok = X509_STORE_CTX_init(verify, bundle->store, X509_STORE_CTX_get0_cert(store_ctx),
                               X509_STORE_CTX_get0_untrusted(store_ctx));
  if (ok == 1) {
    // The TLS client purpose: clientAuth in extendedKeyUsage when the certificate has one.
    X509_STORE_CTX_set_default(verify, "ssl_client");
    ok = X509_verify_cert(verify);
  }
  if (ok != 1) {
    X509_STORE_CTX_set_error(store_ctx, X509_STORE_CTX_get_error(verify));
    X509_STORE_CTX_set_error_depth(store_ctx, X509_STORE_CTX_get_error_depth(verify));
  }
  X509_STORE_CTX_free(verify);
  return ok == 1 ? 1 : 0;
}

bool ConfigureServingTls(SSL_CTX* ctx, ServingCertificate& cert,
                         ClientCertificateAuthority* client_ca) {
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE |
                               SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) return false;
  if (SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) return false;
  cert.AttachTo(ctx);
  if (client_ca != nullptr) client_ca->AttachTo(ctx);
  return true;
}

int ServingCertificate::CertificateCallback(SSL* ssl, void* self) {
  auto pair = static_cast<ServingCertificate*>(self)->Current();
  if (!pair) return 0;  // no certificate yet: abort the handshake
  // override=1 replaces whatever the SSL inherited; the SSL keeps its own references.
  return SSL_use_cert_and_key(ssl, pair->leaf, pair->key, pair->chain, 1) == 1 ? 1 : 0;
}

}  // namespace kmt::webhook
