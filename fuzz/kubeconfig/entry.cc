// fuzz/kubeconfig/entry.cc — arbitrary bytes as kubeconfig files, loaded by the real
// LoadKubeconfig (kube/kubeconfig.h) from a private temporary directory.
//
// Input: byte 0 bit 0 chooses --kubeconfig (the rest is one file) or $KUBECONFIG (the rest
// is split at its first NUL byte into two files, merged); bit 1 passes --context=c. The
// directory also holds ca.crt, client.crt and client.key, so relative paths can resolve.
// Checks (the header's promises):
//   - every failure is a KubeError of kind kConfig whose message names the file
//     ("kubeconfig <path>..."); nothing else escapes;
//   - a loaded config has an http(s) server with a host and no trailing slash, a source, a
//     namespace, client certificate and key together or neither, never a CA together with
//     insecure-skip-tls-verify, and an exec plugin only with a supported apiVersion and a
//     command.
#include "fuzz/entry.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "kube/error.h"
#include "kube/kubeconfig.h"

namespace kmt::fuzz {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

// One directory per process, removed at exit.
const fs::path& Dir() {
  static const fs::path* dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "kmt-fuzz-kubeconfig-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    auto* d = new fs::path(tmpl);
    Write(*d / "ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    Write(*d / "client.crt", "cert");
    Write(*d / "client.key", "key");
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(*dir, ec);
    });
    return d;
  }();
  return *dir;
}

std::string CheckConfig(const kube::ClientConfig& c) {
  std::string_view server = c.server;
  const bool https = server.starts_with("https://");
  if (!https && !server.starts_with("http://")) return "server is not an http(s) URL: " + c.server;
  if (server.size() == (https ? 8 : 7)) return "server has no host: " + c.server;
  if (server.back() == '/') return "server ends with a slash: " + c.server;
  if (c.source.empty()) return "no source";
  if (c.namespace_name.empty()) return "no namespace";
  if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
    return "client certificate without key or key without certificate";
  }
  if (c.insecure_skip_tls_verify && !c.ca_pem.empty()) return "a CA together with insecure";
  if (c.exec) {
    if (c.exec->api_version != "client.authentication.k8s.io/v1" &&
        c.exec->api_version != "client.authentication.k8s.io/v1beta1") {
      return "exec with apiVersion " + c.exec->api_version;
    }
    if (c.exec->command.empty()) return "exec without a command";
  }
  return {};
}

std::string Check(std::string_view input) {
  if (input.empty()) return {};
  const unsigned control = static_cast<unsigned char>(input[0]);
  input.remove_prefix(1);
  const fs::path a = Dir() / "a.yaml";
  const fs::path b = Dir() / "b.yaml";
  kube::KubeconfigOptions options;
  std::string kubeconfig_env;
  if ((control & 1) == 0) {
    Write(a, input);
    options.explicit_path = a.string();
  } else {
    const size_t nul = input.find('\0');
    Write(a, input.substr(0, nul));
    Write(b, nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1));
    kubeconfig_env = a.string() + ":" + (Dir() / "missing.yaml").string() + ":" + b.string();
  }
  if (control & 2) options.context = "c";
  options.getenv = [&](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBECONFIG" && !kubeconfig_env.empty()) return kubeconfig_env;
    if (name == "HOME") return Dir().string();
    return std::nullopt;
  };
  try {
    return CheckConfig(kube::LoadKubeconfig(options));
  } catch (const kube::KubeError& e) {
    if (e.kind() != kube::ErrorKind::kConfig) {
      return fmt::format("a KubeError of kind {}: {}", static_cast<int>(e.kind()), e.what());
    }
    if (!std::string_view(e.what()).starts_with("kubeconfig")) {
      return std::string("a message that does not name the file: ") + e.what();
    }
    return {};
  }
}

}  // namespace

std::string CheckTarget(std::string_view input) { return Check(input); }

}  // namespace kmt::fuzz
