#include "bench/server_process.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>

#include "bench/stats.h"

namespace kmt::bench {
namespace {

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// One line (without the newline); false at end of file or on an error.
bool ReadLine(int fd, std::string* line) {
  line->clear();
  char c;
  for (;;) {
    ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (c == '\n') return true;
    line->push_back(c);
  }
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return s(u.ru_utime) + s(u.ru_stime);
}

// The child: start the server, report its port, answer snapshots until "stop" or EOF.
[[noreturn]] void Child(const std::function<ChildServer()>& make, int in, int out) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  ChildServer server;
  try {
    server = make();
  } catch (const std::exception& e) {
    WriteAll(out, std::string("error ") + e.what() + "\n");
    _exit(1);
  }
  WriteAll(out, "port " + std::to_string(server.port) + "\n");
  std::string cmd;
  while (ReadLine(in, &cmd) && cmd == "snapshot") {
    std::vector<double> admit;
    if (server.take_admit_seconds) admit = server.take_admit_seconds();
    char buf[128];
    std::snprintf(buf, sizeof buf, "%.6f %zu %.9f\n", SelfCpuSeconds(), admit.size(),
                  Percentile(admit, 0.99));
    WriteAll(out, buf);
  }
  if (server.stop) server.stop();
  _exit(0);
}

}  // namespace

ServerProcess::ServerProcess(const std::function<ChildServer()>& make) {
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    close(down[1]);
    close(up[0]);
    Child(make, down[0], up[1]);
  }
  close(down[0]);
  close(up[1]);
  to_child_ = down[1];
  from_child_ = up[0];
  std::string line;
  if (!ReadLine(from_child_, &line) || !line.starts_with("port ")) {
    const std::string why = line.empty() ? "the server's process died at start" : line;
    Reap();
    throw std::runtime_error(why);
  }
  port_ = std::stoi(line.substr(5));
}

ServerProcess::~ServerProcess() { Reap(); }

void ServerProcess::Reap() {
  if (pid_ <= 0) return;
  WriteAll(to_child_, "stop\n");
  close(to_child_);
  close(from_child_);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

ServerUsage ServerProcess::Snapshot() {
  WriteAll(to_child_, "snapshot\n");
  std::string line;
  ServerUsage u;
  std::istringstream fields;
  if (ReadLine(from_child_, &line)) fields.str(line);
  if (!(fields >> u.cpu_seconds >> u.admit_count >> u.admit_p99)) {
    throw std::runtime_error("the server's process did not answer a snapshot");
  }
  return u;
}

}  // namespace kmt::bench
