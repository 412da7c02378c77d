// kube/credentials.h — the identity presented on each request, kept fresh.
//
// A static token or client certificate never changes. A token file (the
// in-cluster projected service account token, or users[].tokenFile) is
// re-read once a minute, as client-go does, because the kubelet rotates it.
// An exec plugin (client.authentication.k8s.io/v1 or v1beta1) is run with
// KUBERNETES_EXEC_INFO set (spec.interactive=false); its answer is cached
// until status.expirationTimestamp. After a 401 the REST client calls
// Invalidate() and retries once with fresh credentials.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"
#include "kube/kubeconfig.h"

namespace kmt::kube {

struct Credential {
  std::string bearer_token;     // empty: none
  std::string client_cert_pem;  // empty: none
  std::string client_key_pem;
};

// Runs a command; returns its exit status and stdout. Injectable for tests.
struct ExecResult {
  int exit_code = 0;
  std::string stdout_text;
  std::string stderr_text;
};
using ExecRunner =
    std::function<ExecResult(const std::string& command, const std::vector<std::string>& args,
                             const std::vector<std::pair<std::string, std::string>>& env)>;

// Runs the command with fork/exec, the process environment plus env, stdin
// closed, outputs capped at 1 MiB each; a plugin running longer than
// `timeout` (on `clock`'s steady time) is killed. Throws KubeError kConfig when it cannot
// start.
ExecResult RunProcess(const std::string& command, const std::vector<std::string>& args,
                      const std::vector<std::pair<std::string, std::string>>& env,
                      std::chrono::seconds timeout = std::chrono::seconds(60),
                      base::Clock& clock = base::SystemClock());

class CredentialSource {
 public:
  // Token files are re-read and exec credentials expire on `clock`'s wall time.
  explicit CredentialSource(ClientConfig config, base::Clock& clock = base::SystemClock(),
                            ExecRunner runner = nullptr);

  // Current credential; throws KubeError kConfig (naming the file or plugin)
  // when it cannot be obtained. Thread-safe.
  Credential Get();
  // Forget cached token-file / exec results (after a 401).
  void Invalidate();

 private:
  Credential RunExec();

  ClientConfig config_;
  base::Clock& clock_;
  ExecRunner runner_;
  std::mutex mu_;
  std::optional<Credential> cached_;
  std::optional<std::chrono::system_clock::time_point> expires_;
};

// Parses an RFC 3339 timestamp ("2026-01-01T00:00:00Z", fractional seconds
// and numeric offsets accepted).
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& s);

}  // namespace kmt::kube
