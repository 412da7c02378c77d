// bench/operator_process.h — runs the operator binary (//cmd/operator:operator) as a child
// process for the benchmarks that need it: start with flags, wait for /readyz, read its
// RSS, stop it with SIGTERM (SIGKILL after a grace period).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/poll.h"

namespace kmt::bench {

class OperatorProcess {
 public:
  // Starts `binary` with `args`, stdout and stderr appended to `log_file`. Throws
  // std::runtime_error naming the file at fault: the log file when it cannot be opened
  // (e.g. its directory does not exist), the binary when it cannot be spawned.
  OperatorProcess(const std::string& binary, const std::vector<std::string>& args,
                  const std::string& log_file);
  ~OperatorProcess();  // Stop()
  OperatorProcess(const OperatorProcess&) = delete;
  OperatorProcess& operator=(const OperatorProcess&) = delete;

  // Polls http://127.0.0.1:<health_port>/readyz every `poll` until it answers 200. False
  // when the timeout passes or the process exits first.
  bool WaitReady(int health_port, std::chrono::seconds timeout,
                 std::chrono::milliseconds poll = std::chrono::milliseconds(100));
  // VmRSS of the process in bytes; nullopt when it is gone.
  std::optional<uint64_t> RssBytes() const;
  // Seconds since the constructor spawned the process (timed from just before posix_spawn).
  double SecondsSinceSpawn() const { return since_spawn_.ElapsedSeconds(); }
  void Stop();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  base::Stopwatch since_spawn_;
};

// VmRSS (kB) parsed from the text of /proc/<pid>/status, in bytes; nullopt when absent.
std::optional<uint64_t> ParseVmRss(const std::string& proc_status);

}  // namespace kmt::bench
