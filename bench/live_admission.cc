#include "bench/live_admission.h"

#include <dirent.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "bench/stats.h"

namespace kmt::bench {

bool LiveRatioBudgetApplies(bool cache_on, double rate) {
  return !cache_on && (rate == 50 || rate == 200);
}

std::optional<double> CpuPer1k(double cpu_seconds, const LoadResult& run) {
  const size_t answered = run.service_seconds.size();
  if (answered == 0) return std::nullopt;
  return cpu_seconds / static_cast<double>(answered) * 1000;
}

namespace {

std::string Latency(const Summary& s) {
  return s.count == 0 ? "none answered" : FormatSeconds(s.p50);
}

std::string Cpu(std::optional<double> per1k) {
  return per1k ? FormatSeconds(*per1k) : "none answered";
}

}  // namespace

std::vector<Row> LiveAdmissionRows(const LivePhase& p) {
  const Summary op = Summarize(p.op.service_seconds);
  const Summary floor = Summarize(p.floor.service_seconds);
  const Summary op_due = Summarize(p.op.response_seconds);
  const Summary floor_due = Summarize(p.floor.response_seconds);
  const std::string at =
      fmt::format(" (SAR cache {}) at {:.0f} req/s", p.cache_on ? "on" : "off", p.rate);
  const auto p99 = [](const Summary& s) {
    return s.count == 0 ? std::string("none answered") : FormatSeconds(s.p99);
  };
  const auto errors = [](const LoadResult& r) { return fmt::format("{} / {}", r.errors, r.sent); };
  const bool budget = LiveRatioBudgetApplies(p.cache_on, p.rate);
  const double p99_ratio = Ratio(op.p99, floor.p99);
  const bool answered = op.count > 0 && floor.count > 0;
  const std::optional<double> op_cpu = CpuPer1k(p.op_cpu_seconds, p.op);
  const std::optional<double> api_op = CpuPer1k(p.apiserver_cpu_seconds_op, p.op);
  const std::optional<double> api_floor = CpuPer1k(p.apiserver_cpu_seconds_floor, p.floor);
  return {
      {"p50" + at, Latency(op), Latency(floor),
       answered ? FormatRatio(Ratio(op.p50, floor.p50)) : "", "", std::nullopt},
      {"p99" + at, p99(op), p99(floor), answered ? FormatRatio(p99_ratio) : "",
       budget ? fmt::format("≤ {:.1f}× floor", kLiveFloorRatioBudget) : "",
       budget ? std::optional<bool>(answered && p99_ratio <= kLiveFloorRatioBudget) : std::nullopt},
      {"p99 from due time (incl. waiting for a connection)" + at, p99(op_due), p99(floor_due),
       op_due.count > 0 && floor_due.count > 0 ? FormatRatio(Ratio(op_due.p99, floor_due.p99)) : "",
       "", std::nullopt},
      {"errors / sent" + at, errors(p.op), errors(p.floor), "", "0",
       p.op.errors == 0 && p.op.sent > 0},
      {"operator CPU per 1,000 reviews" + at, Cpu(op_cpu), "", "", "", std::nullopt},
      {"kube-apiserver CPU per 1,000 reviews" + at, Cpu(api_op), Cpu(api_floor),
       api_op && api_floor ? FormatRatio(Ratio(*api_op, *api_floor)) : "", "", std::nullopt},
  };
}

std::vector<Row> LiveIdleRows(const LiveIdle& idle) {
  const std::string what =
      fmt::format(" per second, no load (SAR cache {})", idle.cache_on ? "on" : "off");
  const auto per_second = [&](double cpu) {
    return idle.seconds > 0 ? FormatSeconds(cpu / idle.seconds) : std::string("not measured");
  };
  return {
      {"operator CPU" + what, per_second(idle.op_cpu_seconds), "", "", "", std::nullopt},
      {"kube-apiserver CPU" + what, per_second(idle.apiserver_cpu_seconds), "", "", "",
       std::nullopt},
  };
}

std::optional<unsigned long long> ParseProcStatTicks(const std::string& stat) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields are counted
  // after the last ')'. utime and stime are fields 14 and 15 (1-based), i.e. the 12th and
  // 13th after the comm.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream in(stat.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 1; i <= 13; ++i) {
    if (!(in >> field)) return std::nullopt;
    if (i < 12) continue;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(field.c_str(), &end, 10);
    if (end == field.c_str() || *end != '\0') return std::nullopt;
    (i == 12 ? utime : stime) = v;
  }
  return utime + stime;
}

double ProcessCpuSeconds(pid_t pid) {
  const std::string path = fmt::format("/proc/{}/stat", pid);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::optional<unsigned long long> ticks = ParseProcStatTicks(ss.str());
  if (!f || !ticks) throw std::runtime_error("cannot read the CPU time of process " + path);
  return static_cast<double>(*ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

bool IsApiserverCommandLine(const std::string& cmdline, int port) {
  std::vector<std::string> args;
  std::string arg;
  std::istringstream in(cmdline);
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  if (args.empty()) return false;
  const std::string& bin = args.front();
  const size_t slash = bin.rfind('/');
  if (bin.substr(slash == std::string::npos ? 0 : slash + 1) != "kube-apiserver") return false;
  const std::string want = std::to_string(port);
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--secure-port=" + want) return true;
    if (args[i] == "--secure-port" && i + 1 < args.size() && args[i + 1] == want) return true;
  }
  return false;
}

std::optional<pid_t> FindApiserverPid(int port) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  std::optional<pid_t> found;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    std::ifstream f(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    if (IsApiserverCommandLine(ss.str(), port)) {
      found = static_cast<pid_t>(pid);
      break;
    }
  }
  closedir(proc);
  return found;
}

namespace {

// "host:port" of "scheme://host:port/path".
std::string Authority(const std::string& server) {
  size_t start = server.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  const size_t end = server.find('/', start);
  return server.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

std::optional<int> ServerPort(const std::string& server) {
  const std::string a = Authority(server);
  const size_t colon = a.rfind(':');
  if (colon == std::string::npos || a.find(']', colon) != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const long port = std::strtol(a.c_str() + colon + 1, &end, 10);
  if (end == a.c_str() + colon + 1 || *end != '\0' || port < 1 || port > 65535) {
    return std::nullopt;
  }
  return static_cast<int>(port);
}

std::string ServerHost(const std::string& server) {
  std::string a = Authority(server);
  if (!a.empty() && a.front() == '[') {
    const size_t close = a.find(']');
    return a.substr(1, close == std::string::npos ? std::string::npos : close - 1);
  }
  const size_t colon = a.rfind(':');
  return colon == std::string::npos ? a : a.substr(0, colon);
}

}  // namespace kmt::bench
