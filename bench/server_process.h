// bench/server_process.h — a server under benchmark in a child process of its own, so the
// CPU it spends is measured apart from the load generator's.
//
// ServerProcess forks; the child calls `make()` (which starts a server and returns how to
// reach and stop it) and then serves until told to stop or until the parent dies
// (PR_SET_PDEATHSIG). Fork before the parent starts any thread: the child inherits the
// parent's memory (e.g. a prepared kube::FakeClient) but only the forking thread.
//
// Snapshot() asks the child for the CPU time its process has used so far (getrusage
// RUSAGE_SELF: user + system of every thread, microsecond resolution) and for the
// admitter durations recorded since the previous snapshot (their count and p99), so a
// benchmark phase costs Snapshot() after − Snapshot() before.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace kmt::bench {

// What the child's server offers the harness.
struct ChildServer {
  int port = 0;
  // Admitter durations since the last call (may be empty, e.g. a floor without admitters).
  std::function<std::vector<double>()> take_admit_seconds;
  // Stops the server before the child exits.
  std::function<void()> stop;
};

struct ServerUsage {
  double cpu_seconds = 0;  // of the child's process since it started
  size_t admit_count = 0;  // admitter runs since the previous snapshot
  double admit_p99 = 0;    // seconds
};

class ServerProcess {
 public:
  // Forks and waits for the child's server to listen. Throws std::runtime_error with the
  // child's message when `make` throws or the child dies first.
  explicit ServerProcess(const std::function<ChildServer()>& make);
  ~ServerProcess();  // tells the child to stop and reaps it
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  ServerUsage Snapshot();

 private:
  void Reap();

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  int port_ = 0;
};

}  // namespace kmt::bench
