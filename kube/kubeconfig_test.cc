// kube/kubeconfig_test.cc
#include "kube/kubeconfig.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "kube/error.h"

namespace kmt::kube {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test under Bazel's TEST_TMPDIR.
struct TempDir {
  TempDir() {
    const char* base = std::getenv("TEST_TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/kcfg-XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string Write(const std::string& rel, const std::string& content) const {
    fs::path p = fs::path(path) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
    return p.string();
  }
  std::string path;
};

Getenv Env(const std::map<std::string, std::string>& vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// "hello" in base64.
constexpr const char* kHello64 = "aGVsbG8=";

std::string ConfigError(const KubeconfigOptions& o) {
  try {
    LoadKubeconfig(o);
  } catch (const KubeError& e) {
    CHECK(e.kind() == ErrorKind::kConfig);
    return e.what();
  }
  return "no error";
}

TEST_CASE("One file: cluster, token user, relative CA path, namespace") {
  TempDir d;
  d.Write("certs/ca.crt", "CA-PEM");
  const std::string f = d.Write("cfg/config", R"(
apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: c1, user: u1, namespace: vm-ns}
- name: other
  context: {cluster: c1, user: u2}
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority: ../certs/ca.crt
    tls-server-name: kubernetes.default
users:
- name: u1
  user: {token: abc}
- name: u2
  user:
    client-certificate-data: aGVsbG8=
    client-key-data: aGVsbG8=
    tokenFile: tok
)");
  KubeconfigOptions o;
  o.explicit_path = f;
  o.getenv = Env({{"KUBECONFIG", "/ignored"}});
  ClientConfig c = LoadKubeconfig(o);
  CHECK(c.server == "https://10.0.0.1:6443");
  CHECK(c.ca_pem == "CA-PEM");
  CHECK(c.tls_server_name == "kubernetes.default");
  CHECK_FALSE(c.insecure_skip_tls_verify);
  CHECK(c.token == "abc");
  CHECK(c.namespace_name == "vm-ns");
  CHECK(c.source == "kubeconfig " + f + ", context \"dev\"");

  o.context = "other";
  ClientConfig other = LoadKubeconfig(o);
  CHECK(other.namespace_name == "default");
  CHECK(other.client_cert_pem == "hello");
  CHECK(other.client_key_pem == "hello");
  CHECK(other.token_file == d.path + "/cfg/tok");
}

TEST_CASE("KUBECONFIG merges files like kubectl: first definition wins") {
  TempDir d;
  d.Write("one/ca.crt", "CA-ONE");
  const std::string one = d.Write("one/config", R"(
current-context: a
clusters:
- name: c1
  cluster: {server: "https://one:6443", certificate-authority: ca.crt}
users:
- name: u
  user: {token: from-one}
)");
  const std::string two = d.Write("two/config", R"(
current-context: b
contexts:
- name: a
  context: {cluster: c1, user: u, namespace: from-two}
- name: b
  context: {cluster: c2, user: u}
clusters:
- name: c1
  cluster: {server: "https://two:6443"}
- name: c2
  cluster: {server: "https://c2:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: from-two}
)");
  KubeconfigOptions o;
  o.getenv = Env({{"KUBECONFIG", one + ":" + d.path + "/missing:" + two}});
  ClientConfig c = LoadKubeconfig(o);
  CHECK(c.server == "https://one:6443");
  CHECK(c.ca_pem == "CA-ONE");  // resolved against one/
  CHECK(c.token == "from-one");
  CHECK(c.namespace_name == "from-two");

  o.context = "b";
  ClientConfig b = LoadKubeconfig(o);
  CHECK(b.server == "https://c2:6443");
  CHECK(b.insecure_skip_tls_verify);

  // Without KUBECONFIG: ~/.kube/config.
  d.Write("home/.kube/config", "current-context: b\n" +
                                   std::string("contexts: [{name: b, context: {cluster: x}}]\n") +
                                   "clusters: [{name: x, cluster: {server: 'http://h:8080'}}]\n");
  KubeconfigOptions home;
  home.getenv = Env({{"HOME", d.path + "/home"}});
  CHECK(LoadKubeconfig(home).server == "http://h:8080");
}

TEST_CASE("Exec plugins are read with their paths resolved") {
  TempDir d;
  const std::string f = d.Write("k/config", R"(
current-context: x
contexts: [{name: x, context: {cluster: c, user: e}}]
clusters: [{name: c, cluster: {server: "https://s"}}]
users:
- name: e
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [--cluster, prod]
      env: [{name: REGION, value: eu}]
      provideClusterInfo: true
      installHint: install get-token
      interactiveMode: Never
)");
  KubeconfigOptions o;
  o.explicit_path = f;
  ClientConfig c = LoadKubeconfig(o);
  REQUIRE(c.exec.has_value());
  CHECK(c.exec->api_version == "client.authentication.k8s.io/v1");
  CHECK(c.exec->command == d.path + "/k/bin/get-token");
  CHECK(c.exec->args == std::vector<std::string>{"--cluster", "prod"});
  CHECK(c.exec->env == std::vector<std::pair<std::string, std::string>>{{"REGION", "eu"}});
  CHECK(c.exec->provide_cluster_info);
  CHECK(c.exec->install_hint == "install get-token");
}

TEST_CASE("Malformed kubeconfigs name the file and the field") {
  TempDir d;
  const std::string head =
      "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n";
  struct Row {
    std::string body;
    std::string message;  // {} = the file path
  };
  const Row row = GENERATE_COPY(values<Row>({
      {"current-context: [unclosed\n",
       "kubeconfig {}: invalid YAML at line 2, column 1: end of sequence flow not found"},
      {"- a\n- b\n", "kubeconfig {}: not a YAML mapping"},
      {"contexts: [{name: x, context: {cluster: c}}]\n",
       "kubeconfig {}: no context chosen: current-context is not set and --context was not given"},
      {"current-context: y\ncontexts: [{name: x, context: {cluster: c}}]\n",
       "kubeconfig {}: context \"y\" not found"},
      {head + "clusters: [{name: d, cluster: {server: 'https://s'}}]\n",
       "kubeconfig {}: contexts[\"x\"].cluster: cluster \"c\" not found"},
      {head + "clusters: [{name: c, cluster: {}}]\n",
       "kubeconfig {}: clusters[\"c\"].server: missing"},
      {head + "clusters: [{name: c, cluster: {server: 'ftp://s'}}]\n",
       "kubeconfig {}: clusters[\"c\"].server: \"ftp://s\" is not an http(s) URL"},
      {head + "clusters: [{name: c, cluster: {server: 'https:///'}}]\n",
       "kubeconfig {}: clusters[\"c\"].server: \"https:///\" has no host"},
      {head + "clusters: [{name: c, cluster: {server: 'http://'}}]\n",
       "kubeconfig {}: clusters[\"c\"].server: \"http://\" has no host"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s', certificate-authority: "
              "nope.crt}}]\n",
       "kubeconfig {}: clusters[\"c\"].certificate-authority: cannot read {dir}/nope.crt: No such "
       "file or directory"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s', certificate-authority-data: "
              "'!!'}}]\n",
       "kubeconfig {}: clusters[\"c\"].certificate-authority-data: invalid base64"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s', certificate-authority-data: "
              "aGVsbG8=, insecure-skip-tls-verify: true}}]\n",
       "kubeconfig {}: clusters[\"c\"].insecure-skip-tls-verify: specifying a root certificates "
       "file with the insecure flag is not allowed"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s', insecure-skip-tls-verify: "
              "maybe}}]\n",
       "kubeconfig {}: clusters[\"c\"].insecure-skip-tls-verify: must be true or false"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\n",
       "kubeconfig {}: contexts[\"x\"].user: user \"u\" not found"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{client-certificate-data: aGVsbG8=}}]\n",
       "kubeconfig {}: users[\"u\"].client-key: client certificate and key must be set together"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{token: [1]}}]\n",
       "kubeconfig {}: users[\"u\"].token: must be a string"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}}]\n",
       "kubeconfig {}: users[\"u\"].exec.apiVersion: \"client.authentication.k8s.io/v1alpha1\" is "
       "not supported (want client.authentication.k8s.io/v1 or v1beta1)"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{exec: {apiVersion: client.authentication.k8s.io/v1}}}]\n",
       "kubeconfig {}: users[\"u\"].exec.command: missing"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{auth-provider: {name: gcp}}}]\n",
       "kubeconfig {}: users[\"u\"].auth-provider: auth providers are not supported; use exec"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{exec: {apiVersion: client.authentication.k8s.io/v1, command: x, args: [a, {b: "
              "c}]}}}]\n",
       "kubeconfig {}: users[\"u\"].exec.args[1]: must be a string"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{exec: {apiVersion: client.authentication.k8s.io/v1, command: x, args: [[a]]}}}]\n",
       "kubeconfig {}: users[\"u\"].exec.args[0]: must be a string"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{exec: {apiVersion: client.authentication.k8s.io/v1, command: x, env: [{name: {a: "
              "b}, value: v}]}}}]\n",
       "kubeconfig {}: users[\"u\"].exec.env[0].name: must be a string"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{exec: {apiVersion: client.authentication.k8s.io/v1, command: x, env: [{value: "
              "v}]}}}]\n",
       "kubeconfig {}: users[\"u\"].exec.env[0].name: must be a string"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{exec: {apiVersion: client.authentication.k8s.io/v1, command: x, env: [x]}}}]\n",
       "kubeconfig {}: users[\"u\"].exec.env[0].name: must be a string"},
      {head + "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: "
              "{exec: {apiVersion: client.authentication.k8s.io/v1, command: x, env: [{name: A, "
              "value: [1, 2]}]}}}]\n",
       "kubeconfig {}: users[\"u\"].exec.env[0].value: must be a string"},
      {"clusters: {c: 1}\n", "kubeconfig {}: clusters: must be a list"},
      {"clusters: [{cluster: {}}]\n", "kubeconfig {}: clusters[0].name: missing"},
  }));
  const std::string f = d.Write("bad/config", row.body);
  CAPTURE(row.body);
  KubeconfigOptions o;
  o.explicit_path = f;
  std::string want = row.message;
  want.replace(want.find("{}"), 2, f);
  if (auto p = want.find("{dir}"); p != std::string::npos) want.replace(p, 5, d.path + "/bad");
  CHECK(ConfigError(o) == want);
}

TEST_CASE("Missing files") {
  KubeconfigOptions explicit_missing;
  explicit_missing.explicit_path = "/nonexistent/config";
  CHECK(ConfigError(explicit_missing) ==
        "kubeconfig /nonexistent/config: cannot read: No such file or directory");
  KubeconfigOptions all_missing;
  all_missing.getenv = Env({{"KUBECONFIG", "/nope/a:/nope/b"}});
  CHECK(ConfigError(all_missing) ==
        "kubeconfig: none of the files in KUBECONFIG exist (/nope/a:/nope/b)");
  KubeconfigOptions nothing;
  nothing.getenv = Env({});
  CHECK(ConfigError(nothing) == "kubeconfig: neither --kubeconfig, KUBECONFIG nor HOME is set");
}

TEST_CASE("In-cluster configuration") {
  TempDir d;
  d.Write("sa/token", "tok\n");
  d.Write("sa/ca.crt", "CA");
  d.Write("sa/namespace", "kmt-system\n");
  InClusterOptions o;
  o.root = d.path + "/sa";
  o.getenv = Env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}});
  ClientConfig c = InClusterConfig(o);
  CHECK(c.server == "https://10.96.0.1:443");
  CHECK(c.token_file == d.path + "/sa/token");
  CHECK(c.token.empty());
  CHECK(c.ca_pem == "CA");
  CHECK(c.namespace_name == "kmt-system");
  CHECK(c.source == "in-cluster");

  o.getenv = Env({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}});
  CHECK(InClusterConfig(o).server == "https://[fd00::1]:443");

  o.getenv = Env({});
  CHECK_THROWS_WITH(InClusterConfig(o),
                    "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set "
                    "(not running in a pod?)");
  o.getenv = Env({{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "1"}});
  o.root = d.path + "/none";
  CHECK_THROWS_WITH(InClusterConfig(o),
                    "in-cluster: cannot read " + d.path + "/none/token: No such file or directory");
}

TEST_CASE("LoadClientConfig: --kubeconfig, KUBECONFIG, in-cluster, then home") {
  TempDir d;
  auto file = [&](const std::string& rel, const std::string& server) {
    return d.Write(rel,
                   "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                   "clusters: [{name: c, cluster: {server: '" +
                       server + "'}}]\n");
  };
  const std::string flag = file("flag", "https://flag");
  const std::string env = file("env", "https://env");
  file("home/.kube/config", "https://home");
  d.Write("sa/token", "t");
  d.Write("sa/ca.crt", "CA");
  InClusterOptions ic;
  ic.root = d.path + "/sa";
  ic.getenv = Env({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}});
  KubeconfigOptions o;
  o.explicit_path = flag;
  o.getenv = Env({{"KUBECONFIG", env}, {"HOME", d.path + "/home"}});
  CHECK(LoadClientConfig(o, ic).server == "https://flag");
  o.explicit_path.clear();
  CHECK(LoadClientConfig(o, ic).server == "https://env");
  o.getenv = Env({{"HOME", d.path + "/home"}});
  CHECK(LoadClientConfig(o, ic).server == "https://10.0.0.1:443");
  ic.getenv = Env({});
  CHECK(LoadClientConfig(o, ic).server == "https://home");
}

}  // namespace
}  // namespace kmt::kube
