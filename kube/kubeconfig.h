// kube/kubeconfig.h — where to reach the API server and as whom.
//
// LoadKubeconfig follows kubectl's loading rules (client-go
// tools/clientcmd/loader.go): --kubeconfig names exactly one file; otherwise
// every file in $KUBECONFIG (':'-separated, missing files skipped) is merged
// with the first file to define a cluster/user/context name winning and
// current-context taken from the first file that sets it; otherwise
// ~/.kube/config. Relative paths in a file are resolved against that file's
// directory. InClusterConfig reads the pod's service account.
//
// Every failure is a KubeError of kind kConfig whose message names the file
// and the field, e.g.
//   kubeconfig /home/a/.kube/config: users["admin"].client-key: cannot read
//   /home/a/.kube/admin.key: No such file or directory
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kmt::kube {

// users[].exec: a client.authentication.k8s.io credential plugin.
struct ExecConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  bool provide_cluster_info = false;
  std::string install_hint;
};

// A resolved configuration: file contents are already read (PEM bytes), so
// the transport needs no filesystem access except token_file and exec.
struct ClientConfig {
  std::string server;  // https://host:port (no trailing slash)
  std::string tls_server_name;
  bool insecure_skip_tls_verify = false;
  std::string ca_pem;  // empty: system roots
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;
  std::string token_file;  // re-read as it rotates
  std::optional<ExecConfig> exec;
  std::string namespace_name = "default";
  std::string source;  // for messages: "kubeconfig /path, context \"c\"" or "in-cluster"
};

using Getenv = std::function<std::optional<std::string>(const std::string&)>;
Getenv ProcessEnv();

struct KubeconfigOptions {
  std::string explicit_path;  // --kubeconfig
  std::string context;        // --context
  Getenv getenv = ProcessEnv();
};

ClientConfig LoadKubeconfig(const KubeconfigOptions& options);

struct InClusterOptions {
  std::string root = "/var/run/secrets/kubernetes.io/serviceaccount";
  Getenv getenv = ProcessEnv();
};

// KUBERNETES_SERVICE_HOST/PORT, <root>/token (as token_file), <root>/ca.crt,
// <root>/namespace.
ClientConfig InClusterConfig(const InClusterOptions& options = {});

// controller-runtime's order (pkg/client/config GetConfig): --kubeconfig,
// then $KUBECONFIG, then in-cluster when KUBERNETES_SERVICE_HOST is set, then
// ~/.kube/config. --context applies to the kubeconfig cases.
ClientConfig LoadClientConfig(const KubeconfigOptions& options,
                              const InClusterOptions& in_cluster = {});

}  // namespace kmt::kube
