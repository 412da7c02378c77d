#include "bench/operator_process.h"

#include <fcntl.h>
#include <httplib.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "base/poll.h"

extern char** environ;

namespace kmt::bench {

OperatorProcess::OperatorProcess(const std::string& binary, const std::vector<std::string>& args,
                                 const std::string& log_file) {
  // Opened here rather than in the child, so a bad path is reported as the log's fault and
  // not as the binary's (posix_spawn reports a failed file action as its own error).
  const int log_fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    throw std::runtime_error("cannot open the operator's log file " + log_file + ": " +
                             std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
  std::vector<std::string> all = {binary};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(all.size());
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  since_spawn_.Restart();
  const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(log_fd);
  if (rc != 0) {
    pid_ = -1;
    throw std::runtime_error("cannot start " + binary + ": " + std::strerror(rc));
  }
}

OperatorProcess::~OperatorProcess() { Stop(); }

bool OperatorProcess::WaitReady(int health_port, std::chrono::seconds timeout,
                                std::chrono::milliseconds poll) {
  httplib::Client cli("127.0.0.1", health_port);
  cli.set_connection_timeout(1, 0);
  cli.set_read_timeout(2, 0);
  bool exited = false;
  const bool done = base::PollUntil(base::SystemClock(), timeout, poll, [&] {
    int status = 0;
    if (pid_ <= 0 || waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      exited = true;
      return true;
    }
    auto res = cli.Get("/readyz");
    return res && res->status == 200;
  });
  return done && !exited;
}

std::optional<uint64_t> ParseVmRss(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("VmRSS:")) continue;
    std::istringstream fields(line.substr(6));
    uint64_t kb = 0;
    std::string unit;
    if (fields >> kb >> unit && unit == "kB") return kb * 1024;
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<uint64_t> OperatorProcess::RssBytes() const {
  if (pid_ <= 0) return std::nullopt;
  std::ifstream f("/proc/" + std::to_string(pid_) + "/status");
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseVmRss(ss.str());
}

void OperatorProcess::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  if (base::PollUntil(base::SystemClock(), std::chrono::seconds(10), std::chrono::milliseconds(50),
                      [&] { return waitpid(pid_, &status, WNOHANG) == pid_; })) {
    pid_ = -1;
    return;
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

}  // namespace kmt::bench
