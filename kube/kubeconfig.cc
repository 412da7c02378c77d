// kube/kubeconfig.cc
#include "kube/kubeconfig.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kube/base64.h"
#include "kube/error.h"

namespace kmt::kube {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void ConfigError(const std::string& message) {
  throw KubeError(ErrorKind::kConfig, message);
}

std::optional<std::string> ReadFile(const std::string& path, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = std::strerror(errno);
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One kubeconfig file, parsed.
struct File {
  std::string path;
  YAML::Node root;
};

// A named entry (cluster/user/context) and the file it came from.
struct Named {
  const File* file;
  YAML::Node node;  // the inner "cluster"/"user"/"context" map
};

std::string Field(const std::string& list, const std::string& name, const std::string& field) {
  return fmt::format("{}[\"{}\"].{}", list, name, field);
}

// Reads an optional string field; anything but a scalar is an error.
std::string Str(const Named& n, const std::string& list, const std::string& name,
                const std::string& field) {
  const YAML::Node v = n.node[field];
  if (!v || v.IsNull()) return "";
  if (!v.IsScalar()) {
    ConfigError(
        fmt::format("kubeconfig {}: {}: must be a string", n.file->path, Field(list, name, field)));
  }
  return v.as<std::string>();
}

bool Bool(const Named& n, const std::string& list, const std::string& name,
          const std::string& field) {
  const YAML::Node v = n.node[field];
  if (!v || v.IsNull()) return false;
  try {
    return v.as<bool>();
  } catch (const YAML::Exception&) {
    ConfigError(fmt::format("kubeconfig {}: {}: must be true or false", n.file->path,
                            Field(list, name, field)));
  }
}

std::string Resolve(const File& f, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(f.path).parent_path() / path).lexically_normal().string();
}

// A file field (read now) or its -data twin (base64).
std::string FileOrData(const Named& n, const std::string& list, const std::string& name,
                       const std::string& file_field, const std::string& data_field) {
  const std::string data = Str(n, list, name, data_field);
  if (!data.empty()) {
    std::optional<std::string> decoded = DecodeBase64(data);
    if (!decoded) {
      ConfigError(fmt::format("kubeconfig {}: {}: invalid base64", n.file->path,
                              Field(list, name, data_field)));
    }
    return *decoded;
  }
  const std::string path = Resolve(*n.file, Str(n, list, name, file_field));
  if (path.empty()) return "";
  std::string why;
  std::optional<std::string> content = ReadFile(path, &why);
  if (!content) {
    ConfigError(fmt::format("kubeconfig {}: {}: cannot read {}: {}", n.file->path,
                            Field(list, name, file_field), path, why));
  }
  return *content;
}

File ParseFile(const std::string& path, const std::string& content) {
  File f{path, {}};
  try {
    f.root = YAML::Load(content);
  } catch (const YAML::Exception& e) {
    ConfigError(fmt::format("kubeconfig {}: invalid YAML at line {}, column {}: {}", path,
                            e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (f.root.IsNull()) f.root = YAML::Node(YAML::NodeType::Map);  // empty file: nothing set
  if (!f.root.IsMap()) ConfigError(fmt::format("kubeconfig {}: not a YAML mapping", path));
  return f;
}

// Merges list `list` (clusters/users/contexts) of all files: first name wins.
std::map<std::string, Named> Merge(const std::vector<File>& files, const std::string& list,
                                   const std::string& inner) {
  std::map<std::string, Named> out;
  for (const File& f : files) {
    const YAML::Node entries = f.root[list];
    if (!entries || entries.IsNull()) continue;
    if (!entries.IsSequence()) {
      ConfigError(fmt::format("kubeconfig {}: {}: must be a list", f.path, list));
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      const YAML::Node e = entries[i];
      const YAML::Node name = e.IsMap() ? e["name"] : YAML::Node();
      if (!name || !name.IsScalar() || name.as<std::string>().empty()) {
        ConfigError(fmt::format("kubeconfig {}: {}[{}].name: missing", f.path, list, i));
      }
      const YAML::Node body = e[inner];
      if (body && !body.IsNull() && !body.IsMap()) {
        ConfigError(fmt::format("kubeconfig {}: {}[\"{}\"].{}: must be a mapping", f.path, list,
                                name.as<std::string>(), inner));
      }
      out.emplace(name.as<std::string>(),
                  Named{&f, body && body.IsMap() ? body : YAML::Node(YAML::NodeType::Map)});
    }
  }
  return out;
}

std::vector<std::string> SplitPaths(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ':')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

std::string Join(const std::vector<File>& files) {
  std::string out;
  for (const File& f : files) out += (out.empty() ? "" : ", ") + f.path;
  return out;
}

ExecConfig ReadExec(const Named& user, const std::string& name) {
  const std::string where =
      fmt::format("kubeconfig {}: {}", user.file->path, Field("users", name, "exec"));
  const YAML::Node e = user.node["exec"];
  if (!e.IsMap()) ConfigError(where + ": must be a mapping");
  ExecConfig c;
  c.api_version =
      e["apiVersion"] && e["apiVersion"].IsScalar() ? e["apiVersion"].as<std::string>() : "";
  if (c.api_version != "client.authentication.k8s.io/v1" &&
      c.api_version != "client.authentication.k8s.io/v1beta1") {
    ConfigError(
        fmt::format("{}.apiVersion: \"{}\" is not supported (want "
                    "client.authentication.k8s.io/v1 or v1beta1)",
                    where, c.api_version));
  }
  c.command = e["command"] && e["command"].IsScalar() ? e["command"].as<std::string>() : "";
  if (c.command.empty()) ConfigError(where + ".command: missing");
  // client-go resolves a command with a path separator against the file's directory.
  if (c.command.find('/') != std::string::npos) c.command = Resolve(*user.file, c.command);
  if (const YAML::Node args = e["args"]; args && !args.IsNull()) {
    if (!args.IsSequence()) ConfigError(where + ".args: must be a list");
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].IsScalar()) ConfigError(fmt::format("{}.args[{}]: must be a string", where, i));
      c.args.push_back(args[i].as<std::string>());
    }
  }
  if (const YAML::Node env = e["env"]; env && !env.IsNull()) {
    if (!env.IsSequence()) ConfigError(where + ".env: must be a list");
    for (size_t i = 0; i < env.size(); ++i) {
      const YAML::Node kv = env[i];
      if (!kv.IsMap() || !kv["name"] || !kv["name"].IsScalar()) {
        ConfigError(fmt::format("{}.env[{}].name: must be a string", where, i));
      }
      const YAML::Node value = kv["value"];
      if (value && !value.IsNull() && !value.IsScalar()) {
        ConfigError(fmt::format("{}.env[{}].value: must be a string", where, i));
      }
      c.env.emplace_back(kv["name"].as<std::string>(),
                         value && value.IsScalar() ? value.as<std::string>() : "");
    }
  }
  if (e["provideClusterInfo"]) c.provide_cluster_info = e["provideClusterInfo"].as<bool>(false);
  if (e["installHint"]) c.install_hint = e["installHint"].as<std::string>("");
  return c;
}

}  // namespace

Getenv ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

ClientConfig LoadKubeconfig(const KubeconfigOptions& options) {
  std::vector<std::string> paths;
  bool must_exist = true;
  if (!options.explicit_path.empty()) {
    paths.push_back(options.explicit_path);
  } else if (std::optional<std::string> env = options.getenv("KUBECONFIG"); env && !env->empty()) {
    paths = SplitPaths(*env);
    must_exist = false;
  } else {
    std::optional<std::string> home = options.getenv("HOME");
    if (!home) ConfigError("kubeconfig: neither --kubeconfig, KUBECONFIG nor HOME is set");
    paths.push_back(*home + "/.kube/config");
  }

  std::vector<File> files;
  files.reserve(paths.size());
  for (const std::string& p : paths) {
    if (!must_exist && !fs::exists(p)) continue;
    std::string why;
    std::optional<std::string> content = ReadFile(p, &why);
    if (!content) {
      ConfigError(fmt::format("kubeconfig {}: cannot read: {}", p, why));
    }
    files.push_back(ParseFile(p, *content));
  }
  if (files.empty()) {
    ConfigError(fmt::format("kubeconfig: none of the files in KUBECONFIG exist ({})",
                            fmt::join(paths, ":")));
  }

  const auto contexts = Merge(files, "contexts", "context");
  const auto clusters = Merge(files, "clusters", "cluster");
  const auto users = Merge(files, "users", "user");

  std::string context_name = options.context;
  if (context_name.empty()) {
    for (const File& f : files) {
      const YAML::Node cc = f.root["current-context"];
      if (cc && cc.IsScalar() && !cc.as<std::string>().empty()) {
        context_name = cc.as<std::string>();
        break;
      }
    }
  }
  if (context_name.empty()) {
    ConfigError(
        fmt::format("kubeconfig {}: no context chosen: current-context is not set and "
                    "--context was not given",
                    Join(files)));
  }

  auto ctx = contexts.find(context_name);
  if (ctx == contexts.end()) {
    ConfigError(fmt::format("kubeconfig {}: context \"{}\" not found", Join(files), context_name));
  }
  const Named& c = ctx->second;
  const std::string cluster_name = Str(c, "contexts", context_name, "cluster");
  const std::string user_name = Str(c, "contexts", context_name, "user");
  ClientConfig out;
  out.source = fmt::format("kubeconfig {}, context \"{}\"", c.file->path, context_name);
  if (std::string ns = Str(c, "contexts", context_name, "namespace"); !ns.empty()) {
    out.namespace_name = ns;
  }

  if (cluster_name.empty()) {
    ConfigError(fmt::format("kubeconfig {}: {}: missing", c.file->path,
                            Field("contexts", context_name, "cluster")));
  }
  auto cl = clusters.find(cluster_name);
  if (cl == clusters.end()) {
    ConfigError(fmt::format("kubeconfig {}: {}: cluster \"{}\" not found", c.file->path,
                            Field("contexts", context_name, "cluster"), cluster_name));
  }
  const Named& cluster = cl->second;
  out.server = Str(cluster, "clusters", cluster_name, "server");
  if (out.server.empty()) {
    ConfigError(fmt::format("kubeconfig {}: {}: missing", cluster.file->path,
                            Field("clusters", cluster_name, "server")));
  }
  if (!out.server.starts_with("https://") && !out.server.starts_with("http://")) {
    ConfigError(fmt::format("kubeconfig {}: {}: \"{}\" is not an http(s) URL", cluster.file->path,
                            Field("clusters", cluster_name, "server"), out.server));
  }
  const std::string given = out.server;
  const size_t scheme = out.server.starts_with("https://") ? 8 : 7;
  while (out.server.size() > scheme && out.server.back() == '/') out.server.pop_back();
  if (out.server.size() == scheme || out.server[scheme] == '/') {
    ConfigError(fmt::format("kubeconfig {}: {}: \"{}\" has no host", cluster.file->path,
                            Field("clusters", cluster_name, "server"), given));
  }
  out.tls_server_name = Str(cluster, "clusters", cluster_name, "tls-server-name");
  out.insecure_skip_tls_verify =
      Bool(cluster, "clusters", cluster_name, "insecure-skip-tls-verify");
  out.ca_pem = FileOrData(cluster, "clusters", cluster_name, "certificate-authority",
                          "certificate-authority-data");
  if (out.insecure_skip_tls_verify && !out.ca_pem.empty()) {
    // As kubectl: trusting a CA and skipping verification contradict each other.
    ConfigError(fmt::format(
        "kubeconfig {}: {}: specifying a root certificates file with the "
        "insecure flag is not allowed",
        cluster.file->path, Field("clusters", cluster_name, "insecure-skip-tls-verify")));
  }

  if (!user_name.empty()) {
    auto us = users.find(user_name);
    if (us == users.end()) {
      ConfigError(fmt::format("kubeconfig {}: {}: user \"{}\" not found", c.file->path,
                              Field("contexts", context_name, "user"), user_name));
    }
    const Named& user = us->second;
    if (user.node["auth-provider"]) {
      ConfigError(fmt::format("kubeconfig {}: {}: auth providers are not supported; use exec",
                              user.file->path, Field("users", user_name, "auth-provider")));
    }
    out.token = Str(user, "users", user_name, "token");
    out.token_file = Resolve(*user.file, Str(user, "users", user_name, "tokenFile"));
    out.client_cert_pem =
        FileOrData(user, "users", user_name, "client-certificate", "client-certificate-data");
    out.client_key_pem = FileOrData(user, "users", user_name, "client-key", "client-key-data");
    if (out.client_cert_pem.empty() != out.client_key_pem.empty()) {
      ConfigError(fmt::format("kubeconfig {}: {}: client certificate and key must be set together",
                              user.file->path, Field("users", user_name, "client-key")));
    }
    if (user.node["exec"] && !user.node["exec"].IsNull()) out.exec = ReadExec(user, user_name);
  }
  return out;
}

ClientConfig LoadClientConfig(const KubeconfigOptions& options,
                              const InClusterOptions& in_cluster) {
  const std::optional<std::string> env = options.getenv("KUBECONFIG");
  if (options.explicit_path.empty() && (!env || env->empty()) &&
      in_cluster.getenv("KUBERNETES_SERVICE_HOST")) {
    return InClusterConfig(in_cluster);
  }
  return LoadKubeconfig(options);
}

ClientConfig InClusterConfig(const InClusterOptions& options) {
  const std::optional<std::string> host = options.getenv("KUBERNETES_SERVICE_HOST");
  const std::optional<std::string> port = options.getenv("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    ConfigError(
        "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set "
        "(not running in a pod?)");
  }
  ClientConfig out;
  out.source = "in-cluster";
  // An IPv6 service address needs brackets in a URL.
  const bool v6 = host->find(':') != std::string::npos;
  out.server = fmt::format("https://{}{}{}:{}", v6 ? "[" : "", *host, v6 ? "]" : "", *port);
  out.token_file = options.root + "/token";
  std::string why;
  if (!ReadFile(out.token_file, &why)) {
    ConfigError(fmt::format("in-cluster: cannot read {}: {}", out.token_file, why));
  }
  const std::string ca_path = options.root + "/ca.crt";
  std::optional<std::string> ca = ReadFile(ca_path, &why);
  if (!ca) ConfigError(fmt::format("in-cluster: cannot read {}: {}", ca_path, why));
  out.ca_pem = *ca;
  if (std::optional<std::string> ns = ReadFile(options.root + "/namespace", &why)) {
    std::string trimmed = *ns;
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) {
      trimmed.pop_back();
    }
    if (!trimmed.empty()) out.namespace_name = trimmed;
  }
  return out;
}

}  // namespace kmt::kube
