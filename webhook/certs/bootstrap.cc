#include "webhook/certs/bootstrap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "base/json.h"
#include "base/json_patch.h"
#include "kube/base64.h"
#include "kube/error.h"
#include "kube/reads.h"
#include "kube/resources.h"
#include "webhook/certs/self_signed.h"

namespace kmt::webhook::certs {
namespace {

using nlohmann::json;

std::string Field(const json& secret, const char* key) {
  const auto encoded = base::String(secret, {"data", key});
  if (!encoded) return {};
  return kube::DecodeBase64(*encoded).value_or(std::string());
}

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `content` to a temporary file created with `mode` (never wider, whatever the umask:
// a private key is never readable by others, not even for a moment), then renames it into
// place.
void WriteAtomically(const std::filesystem::path& p, const std::string& content, mode_t mode) {
  std::filesystem::path tmp = p;
  tmp += ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp.string() + ": " + strerror(errno));
  bool ok = ::fchmod(fd, mode) == 0;  // the umask may have narrowed it; never widens
  for (size_t off = 0; ok && off < content.size();) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) off += static_cast<size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, p);
}

}  // namespace

CertBootstrap::CertBootstrap(kube::KubeClient& client, BootstrapOptions options, base::Clock& clock)
    : client_(client), options_(std::move(options)), clock_(clock) {}

json CertBootstrap::EnsureSecret(BootstrapResult& result) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::optional<json> found =
        kube::GetIfExists(client_, kube::kSecrets, options_.ns, options_.secret_name);
    const bool exists = found.has_value();
    json secret = exists ? std::move(*found) : json();
    const auto now = clock_.WallNow();
    KeyPair ca{Field(secret, "ca.crt"), Field(secret, "ca.key")};
    auto ca_info = Inspect(ca.cert_pem);
    bool ca_ok = exists && ca_info && ca_info->is_ca && !ca.key_pem.empty() &&
                 ca_info->not_after > now + options_.renew_before;
    if (!ca_ok) ca = MakeCa("migration-target-webhook-ca", now, options_.ca_validity);
    std::string cert = Field(secret, "tls.crt");
    std::string key = Field(secret, "tls.key");
    auto info = Inspect(cert);
    bool serving_ok = ca_ok && info && info->not_after > now + options_.renew_before &&
                      info->hosts == options_.hosts && Verifies(ca.cert_pem, cert, key);
    if (serving_ok) return secret;

    KeyPair serving = MakeServing(ca, options_.hosts, now, options_.serving_validity);
    json data = {{"ca.crt", kube::EncodeBase64(ca.cert_pem)},
                 {"ca.key", kube::EncodeBase64(ca.key_pem)},
                 {"tls.crt", kube::EncodeBase64(serving.cert_pem)},
                 {"tls.key", kube::EncodeBase64(serving.key_pem)}};
    try {
      if (!exists) {
        json fresh = {{"apiVersion", "v1"},
                      {"kind", "Secret"},
                      {"metadata",
                       {{"name", options_.secret_name},
                        {"namespace", options_.ns},
                        {"labels", {{"app.kubernetes.io/name", "kubevirt-migration-target"}}}}},
                      {"type", "Opaque"},
                      {"data", data}};
        json stored = client_.Create(kube::kSecrets, options_.ns, fresh);
        result.secret_created = true;
        return stored;
      }
      secret["data"] = data;
      json stored = client_.Update(kube::kSecrets, options_.ns, secret);
      result.secret_renewed = true;
      return stored;
    } catch (const kube::KubeError& e) {
      // Another replica wrote first: use what it wrote.
      if (e.kind() != kube::ErrorKind::kConflict) throw;
    }
  }
  throw kube::KubeError(kube::ErrorKind::kConflict,
                        "secret " + options_.ns + "/" + options_.secret_name +
                            " kept changing while the webhook certificate was written");
}

bool CertBootstrap::WriteFiles(const std::string& ca, const std::string& cert,
                               const std::string& key) {
  if (options_.cert_dir.empty()) return false;
  std::filesystem::path dir(options_.cert_dir);
  std::filesystem::create_directories(dir);
  bool wrote = false;
  // Key before certificate: a reload that sees the new certificate finds its key.
  // The key only for the operator's own user; certificates are public.
  struct File {
    const char* name;
    const std::string* content;
    mode_t mode;
  };
  const File files[] = {{"ca.crt", &ca, 0644}, {"tls.key", &key, 0600}, {"tls.crt", &cert, 0644}};
  for (const File& f : files) {
    std::error_code ec;
    const auto perms = std::filesystem::status(dir / f.name, ec).permissions();
    const bool mode_ok =
        !ec && (static_cast<mode_t>(perms) & 0777) == f.mode;  // an older 0644 key is redone
    if (mode_ok && ReadFile(dir / f.name) == *f.content) continue;
    WriteAtomically(dir / f.name, *f.content, f.mode);
    wrote = true;
  }
  return wrote;
}

int CertBootstrap::InjectCa(const kube::Resource& r, const std::string& ca_b64) {
  std::optional<json> found = kube::GetIfExists(client_, r, "", options_.webhook_config_name);
  if (!found) return 0;
  json config = std::move(*found);
  base::JsonPatch ops;
  int changed = 0;
  if (const auto webhooks = base::Array(config, "webhooks")) {
    for (size_t i = 0; i < (*webhooks)->size(); ++i) {
      const json& wh = (**webhooks)[i];
      if (base::StringAt(wh, {"clientConfig", "caBundle"}) == ca_b64) continue;
      const std::string index = std::to_string(i);
      ops.Test(base::Pointer({"webhooks", index, "name"}), base::StringAt(wh, "name"));
      ops.Add(base::Pointer({"webhooks", index, "clientConfig", "caBundle"}), ca_b64);
      ++changed;
    }
  }
  if (changed > 0) {
    client_.Patch(r, "", options_.webhook_config_name, kube::PatchType::kJsonPatch, ops.ToJson());
  }
  return changed;
}

bool CertBootstrap::PublishCa(const std::string& ca) {
  if (options_.ca_config_map_name.empty()) return false;
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::optional<json> found =
        kube::GetIfExists(client_, kube::kConfigMaps, options_.ns, options_.ca_config_map_name);
    try {
      if (!found) {
        json fresh = {{"apiVersion", "v1"},
                      {"kind", "ConfigMap"},
                      {"metadata",
                       {{"name", options_.ca_config_map_name},
                        {"namespace", options_.ns},
                        {"labels", {{"app.kubernetes.io/name", "kubevirt-migration-target"}}}}},
                      {"data", {{"ca.crt", ca}}}};
        client_.Create(kube::kConfigMaps, options_.ns, fresh);
        return true;
      }
      json& cm = *found;
      // Exactly the certificate: a key added by hand is dropped too.
      if (base::At(cm, "data") == json{{"ca.crt", ca}} && !cm.contains("binaryData")) {
        return false;
      }
      cm["data"] = {{"ca.crt", ca}};
      cm.erase("binaryData");
      client_.Update(kube::kConfigMaps, options_.ns, cm);
      return true;
    } catch (const kube::KubeError& e) {
      // Another replica wrote first (409 on create or update): look again.
      if (kube::DispositionOf(e) != kube::Disposition::kReread) throw;
    }
  }
  throw kube::KubeError(kube::ErrorKind::kConflict,
                        "configmap " + options_.ns + "/" + options_.ca_config_map_name +
                            " kept changing while the CA certificate was published");
}

BootstrapResult CertBootstrap::Ensure() {
  BootstrapResult result;
  json secret = EnsureSecret(result);
  const std::string ca = Field(secret, "ca.crt");
  result.files_written = WriteFiles(ca, Field(secret, "tls.crt"), Field(secret, "tls.key"));
  const std::string ca_b64 = kube::EncodeBase64(ca);
  result.webhooks_patched = InjectCa(kube::kValidatingWebhookConfigurations, ca_b64) +
                            InjectCa(kube::kMutatingWebhookConfigurations, ca_b64);
  result.ca_published = PublishCa(ca);
  return result;
}

}  // namespace kmt::webhook::certs
