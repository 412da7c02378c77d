// bench/live_admission.h — the figures and table rows of bench/admission_live_benchmark (the
// operator's webhook against the real kube-apiserver), and the /proc readings it takes:
// a process's CPU time and kube-apiserver's pid.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "bench/load_generator.h"
#include "bench/report.h"

namespace kmt::bench {

// Issue 37's budget: with the SubjectAccessReview cache off, p99 ≤ 1.2× the bare-SAR floor
// at these rates (and 0 errors at every rate, cache on or off).
inline constexpr double kLiveFloorRatioBudget = 1.2;
bool LiveRatioBudgetApplies(bool cache_on, double rate);

// One rate in one cache mode: the operator's run and the floor's run just before it.
struct LivePhase {
  double rate = 0;
  bool cache_on = true;
  LoadResult op;                           // the validate/mutate mix sent to the operator's webhook
  LoadResult floor;                        // bare SubjectAccessReview POSTs sent to kube-apiserver
  double op_cpu_seconds = 0;               // the operator's process over its run
  double apiserver_cpu_seconds_op = 0;     // kube-apiserver over the operator's run
  double apiserver_cpu_seconds_floor = 0;  // kube-apiserver over the floor's run
};

// Both processes with no load, measured before the rates of one cache mode (the operator
// ready, its informers watching): the background the runs' CPU figures include.
struct LiveIdle {
  bool cache_on = true;
  double seconds = 0;
  double op_cpu_seconds = 0;
  double apiserver_cpu_seconds = 0;
};

// The operator's and kube-apiserver's CPU per second of wall time with no load.
std::vector<Row> LiveIdleRows(const LiveIdle& idle);

// CPU seconds per 1,000 answered requests; nullopt when none was answered.
std::optional<double> CpuPer1k(double cpu_seconds, const LoadResult& run);

// p50 and p99 against the floor's (the p99 with the ratio budget where it applies), p99 from
// the instant each request was due (queueing for one of the client's connections), errors /
// sent (budget 0), the operator's CPU per 1,000 reviews, kube-apiserver's CPU per 1,000
// reviews against its CPU per 1,000 bare SubjectAccessReviews.
std::vector<Row> LiveAdmissionRows(const LivePhase& phase);

// utime + stime of /proc/<pid>/stat's text in clock ticks; nullopt when it does not parse.
std::optional<unsigned long long> ParseProcStatTicks(const std::string& stat);
// The CPU seconds process `pid` has used so far; throws std::runtime_error when it is gone.
double ProcessCpuSeconds(pid_t pid);

// True when the NUL-separated command line is kube-apiserver's serving on `port`
// (--secure-port PORT or --secure-port=PORT).
bool IsApiserverCommandLine(const std::string& cmdline, int port);
// kube-apiserver's pid, found by its command line in /proc; nullopt when none matches.
std::optional<pid_t> FindApiserverPid(int port);
// The port of "https://host:port"; nullopt when it names none.
std::optional<int> ServerPort(const std::string& server);
// The host of "https://host:port" (brackets of an IPv6 literal removed).
std::string ServerHost(const std::string& server);

}  // namespace kmt::bench
