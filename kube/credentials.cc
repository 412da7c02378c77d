// kube/credentials.cc
#include "kube/credentials.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "base/json.h"
#include "kube/base64.h"
#include "kube/error.h"

extern char** environ;

namespace kmt::kube {
namespace {

constexpr size_t kMaxOutput = size_t{1} << 20;
constexpr std::chrono::seconds kTokenFileRefresh{60};

[[noreturn]] void ConfigError(const std::string& message) {
  throw KubeError(ErrorKind::kConfig, message);
}

// A string member of the plugin's answer at `path`: "" when absent or null. A value of
// another type is the plugin's mistake, named (client-go fails to decode it too).
std::string AnswerString(const nlohmann::json& answer, std::initializer_list<std::string_view> path,
                         const std::string& who) {
  const nlohmann::json* v = base::Member(answer, path);
  if (v == nullptr) return "";
  if (!v->is_string()) {
    ConfigError(
        fmt::format("{}: {}: must be a string, not {}", who, fmt::join(path, "."), v->type_name()));
  }
  return v->get<std::string>();
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string Excerpt(const std::string& s) {
  std::string t = Trim(s);
  if (t.size() > 300) t = t.substr(0, 300) + "...";
  return t;
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& s) {
  std::tm tm{};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return std::nullopt;
  if (*rest == '.') {
    ++rest;
    while (std::isdigit(static_cast<unsigned char>(*rest))) ++rest;
  }
  long offset = 0;
  if (*rest == 'Z' || *rest == 'z') {
    ++rest;
  } else if (*rest == '+' || *rest == '-') {
    // RFC 3339's time-offset: exactly "+hh:mm" or "-hh:mm".
    const auto digit = [&](int i) { return std::isdigit(static_cast<unsigned char>(rest[i])); };
    if (!digit(1) || !digit(2) || rest[3] != ':' || !digit(4) || !digit(5)) return std::nullopt;
    const long hh = (rest[1] - '0') * 10 + (rest[2] - '0');
    const long mm = (rest[4] - '0') * 10 + (rest[5] - '0');
    offset = (hh * 3600L + mm * 60L) * (*rest == '+' ? 1 : -1);
    rest += 6;
  } else {
    return std::nullopt;
  }
  if (*rest != '\0') return std::nullopt;
  const time_t t = timegm(&tm) - offset;
  return std::chrono::system_clock::from_time_t(t);
}

ExecResult RunProcess(const std::string& command, const std::vector<std::string>& args,
                      const std::vector<std::pair<std::string, std::string>>& env,
                      std::chrono::seconds timeout, base::Clock& clock) {
  // Build argv and envp before fork: the child only calls async-signal-safe functions.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& [k, v] : env) overridden |= (k == name);
    if (!overridden) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env) {
    std::string entry = k;
    entry += '=';
    entry += v;
    env_strings.push_back(std::move(entry));
  }
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings{command};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_strings.size() + 1);
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    ConfigError(fmt::format("exec plugin {}: pipe: {}", command, std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) ConfigError(fmt::format("exec plugin {}: fork: {}", command, std::strerror(errno)));
  if (pid == 0) {
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execvpe(argv[0], argv.data(), envp.data());
    const char* msg = strerror(errno);
    (void)!write(2, msg, strlen(msg));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ExecResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.stdout_text, &result.stderr_text};
  const auto deadline = clock.Now() + timeout;
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.Now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else if (sinks[i]->size() < kMaxOutput) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      }
    }
  }
  if (timed_out) kill(pid, SIGKILL);
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) {
    ConfigError(fmt::format("exec plugin {}: no answer within {}s", command, timeout.count()));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

CredentialSource::CredentialSource(ClientConfig config, base::Clock& clock, ExecRunner runner)
    : config_(std::move(config)), clock_(clock), runner_(std::move(runner)) {
  if (!runner_) {
    runner_ = [](const std::string& c, const std::vector<std::string>& a,
                 const std::vector<std::pair<std::string, std::string>>& e) {
      return RunProcess(c, a, e);
    };
  }
}

void CredentialSource::Invalidate() {
  std::scoped_lock lock(mu_);
  cached_.reset();
  expires_.reset();
}

Credential CredentialSource::Get() {
  std::scoped_lock lock(mu_);
  const auto now = clock_.WallNow();
  if (cached_ && (!expires_ || now < *expires_)) return *cached_;
  Credential c{config_.token, config_.client_cert_pem, config_.client_key_pem};
  expires_.reset();
  if (config_.exec) {
    c = RunExec();
  } else if (!config_.token_file.empty()) {
    std::ifstream in(config_.token_file, std::ios::binary);
    if (!in) {
      ConfigError(fmt::format("{}: token file {}: cannot read: {}", config_.source,
                              config_.token_file, std::strerror(errno)));
    }
    std::stringstream ss;
    ss << in.rdbuf();
    c.bearer_token = Trim(ss.str());
    expires_ = now + kTokenFileRefresh;
  }
  cached_ = c;
  return c;
}

Credential CredentialSource::RunExec() {
  const ExecConfig& x = *config_.exec;
  nlohmann::json info = {{"apiVersion", x.api_version},
                         {"kind", "ExecCredential"},
                         {"spec", {{"interactive", false}}}};
  if (x.provide_cluster_info) {
    nlohmann::json cluster = {{"server", config_.server}};
    if (!config_.tls_server_name.empty()) cluster["tls-server-name"] = config_.tls_server_name;
    if (config_.insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    if (!config_.ca_pem.empty())
      cluster["certificate-authority-data"] = EncodeBase64(config_.ca_pem);
    info["spec"]["cluster"] = cluster;
  }
  auto env = x.env;
  env.emplace_back("KUBERNETES_EXEC_INFO", info.dump());
  const std::string who = fmt::format("{}: exec plugin {}", config_.source, x.command);
  ExecResult r = runner_(x.command, x.args, env);
  if (r.exit_code != 0) {
    std::string msg = fmt::format("{}: exited with status {}", who, r.exit_code);
    if (!Trim(r.stderr_text).empty()) msg += ": " + Excerpt(r.stderr_text);
    if (r.exit_code == 127 && !x.install_hint.empty()) msg += " (" + Trim(x.install_hint) + ")";
    ConfigError(msg);
  }
  nlohmann::json out = nlohmann::json::parse(r.stdout_text, nullptr, false);
  if (!out.is_object()) ConfigError(who + ": answer is not a JSON object");
  if (base::StringAt(out, {"kind"}) != "ExecCredential") {
    ConfigError(who + ": answer is not an ExecCredential");
  }
  if (const std::string api = base::StringAt(out, {"apiVersion"}); api != x.api_version) {
    ConfigError(fmt::format(R"({}: answered apiVersion "{}", want "{}")", who, api, x.api_version));
  }
  const nlohmann::json* status = base::Member(out, {"status"});
  if (status != nullptr && !status->is_object()) ConfigError(who + ": status is not an object");
  Credential c{AnswerString(out, {"status", "token"}, who),
               AnswerString(out, {"status", "clientCertificateData"}, who),
               AnswerString(out, {"status", "clientKeyData"}, who)};
  if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
    ConfigError(who + ": clientCertificateData and clientKeyData must come together");
  }
  if (c.bearer_token.empty() && c.client_cert_pem.empty()) {
    ConfigError(who + ": answer has neither status.token nor a client certificate");
  }
  if (c.client_cert_pem.empty()) {
    c.client_cert_pem = config_.client_cert_pem;
    c.client_key_pem = config_.client_key_pem;
  }
  const std::string exp = AnswerString(out, {"status", "expirationTimestamp"}, who);
  if (!exp.empty()) {
    expires_ = ParseRfc3339(exp);
    if (!expires_) ConfigError(fmt::format("{}: bad expirationTimestamp \"{}\"", who, exp));
  }
  return c;
}

}  // namespace kmt::kube
