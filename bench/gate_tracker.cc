#include "bench/gate_tracker.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <string>

#include "api/names.h"
#include "api/term_and.h"

namespace kmt::bench {

bool Released(const nlohmann::json& pod, const api::NodeSelectorTerm& term) {
  return !api::PodHasGate(pod, api::kSchedulingGate) && api::PodCarriesTerm(pod, term);
}

GateTracker::GateTracker(api::NodeSelectorTerm term, size_t expected)
    : term_(std::move(term)), expected_(expected) {}

void GateTracker::Created(const std::string& pod_name, SteadyTime t) {
  std::scoped_lock lock(mu_);
  created_.emplace(pod_name, t);
  cv_.notify_all();
}

bool GateTracker::Observe(const nlohmann::json& pod, SteadyTime t) {
  if (!pod.contains("metadata") || !Released(pod, term_)) return false;
  const std::string name = pod["metadata"].value("name", "");
  std::scoped_lock lock(mu_);
  const bool first = released_.emplace(name, t).second;
  if (first) cv_.notify_all();
  return first;
}

bool GateTracker::DoneLocked() const {
  return created_.size() >= expected_ && released_.size() >= expected_;
}

bool GateTracker::WaitDone(SteadyTime deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [this] { return DoneLocked(); });
}

size_t GateTracker::released() const {
  std::scoped_lock lock(mu_);
  return released_.size();
}

std::vector<double> GateTracker::Latencies() const {
  std::scoped_lock lock(mu_);
  std::vector<double> out;
  for (const auto& [name, created] : created_) {
    auto it = released_.find(name);
    if (it == released_.end()) continue;
    out.push_back(std::max(0.0, std::chrono::duration<double>(it->second - created).count()));
  }
  return out;
}

double GateTracker::Throughput() const {
  std::scoped_lock lock(mu_);
  if (created_.empty() || released_.empty()) return 0;
  SteadyTime first = created_.begin()->second;
  for (const auto& [name, t] : created_) first = std::min(first, t);
  SteadyTime last = released_.begin()->second;
  for (const auto& [name, t] : released_) last = std::max(last, t);
  const double span = std::chrono::duration<double>(last - first).count();
  return span <= 0 ? 0 : static_cast<double>(released_.size()) / span;
}

std::pair<double, double> GateTracker::Spans() const {
  std::scoped_lock lock(mu_);
  if (created_.empty() || released_.empty()) return {0, 0};
  SteadyTime first = created_.begin()->second, last_created = first;
  for (const auto& [name, t] : created_) {
    first = std::min(first, t);
    last_created = std::max(last_created, t);
  }
  SteadyTime last = released_.begin()->second;
  for (const auto& [name, t] : released_) last = std::max(last, t);
  return {std::chrono::duration<double>(last_created - first).count(),
          std::chrono::duration<double>(last - last_created).count()};
}

std::vector<Row> GateRows(const GateRun& op, const GateRun& floor) {
  const std::string at = fmt::format(" (N = {})", op.n);
  const bool budgeted = op.n == 200 || op.n == 50;
  const double p99_budget = op.n == 200 ? 1.3 : 1.2;
  const bool complete = op.released == op.n && floor.released == floor.n;
  auto judged = [&](bool within) {
    return budgeted ? std::optional<bool>(complete && within) : std::nullopt;
  };
  return {
      {"p50" + at, FormatSeconds(op.latency.p50), FormatSeconds(floor.latency.p50),
       FormatRatio(Ratio(op.latency.p50, floor.latency.p50)), "", std::nullopt},
      {"p99" + at, FormatSeconds(op.latency.p99), FormatSeconds(floor.latency.p99),
       FormatRatio(Ratio(op.latency.p99, floor.latency.p99)),
       budgeted ? fmt::format("≤ {:.1f}× floor", p99_budget) : "",
       judged(op.latency.p99 <= p99_budget * floor.latency.p99)},
      {"max" + at, FormatSeconds(op.latency.max), FormatSeconds(floor.latency.max),
       FormatRatio(Ratio(op.latency.max, floor.latency.max)), "", std::nullopt},
      {"throughput" + at, FormatRate(op.throughput), FormatRate(floor.throughput),
       FormatRatio(Ratio(floor.throughput, op.throughput)), budgeted ? "≤ 1.1× floor's cost" : "",
       judged(floor.throughput <= 1.1 * op.throughput)},
      {"released / created" + at, fmt::format("{} / {}", op.released, op.n),
       fmt::format("{} / {}", floor.released, floor.n), "", budgeted ? "all" : "",
       budgeted ? std::optional<bool>(complete) : std::nullopt},
  };
}

GateRun MedianRun(const std::vector<GateRun>& rounds) {
  GateRun out;
  if (rounds.empty()) return out;
  auto median = [&](auto figure) {
    std::vector<double> v;
    v.reserve(rounds.size());
    for (const GateRun& r : rounds) v.push_back(figure(r));
    return Percentile(std::move(v), 0.5);
  };
  out.n = rounds.front().n;
  out.latency.count = rounds.front().latency.count;
  out.latency.p50 = median([](const GateRun& r) { return r.latency.p50; });
  out.latency.p99 = median([](const GateRun& r) { return r.latency.p99; });
  out.latency.max = median([](const GateRun& r) { return r.latency.max; });
  out.latency.mean = median([](const GateRun& r) { return r.latency.mean; });
  out.throughput = median([](const GateRun& r) { return r.throughput; });
  out.released = rounds.front().released;
  for (const GateRun& r : rounds) {
    out.released = std::min(out.released, r.released);
    out.latency.count = std::min(out.latency.count, r.latency.count);
  }
  return out;
}

std::vector<Row> RoundRows(const std::vector<GateRun>& op, const std::vector<GateRun>& floor) {
  const size_t rounds = std::min(op.size(), floor.size());
  if (rounds < 2) return {};
  std::vector<std::string> p99, cost;
  for (size_t i = 0; i < rounds; ++i) {
    p99.push_back(FormatRatio(Ratio(op[i].latency.p99, floor[i].latency.p99)));
    cost.push_back(FormatRatio(Ratio(floor[i].throughput, op[i].throughput)));
  }
  return {{fmt::format("ratios per round (N = {})", op.front().n),
           fmt::format("p99 {}; throughput {}", fmt::join(p99, " "), fmt::join(cost, " ")), "", "",
           "", std::nullopt}};
}

double MetricTotal(std::string_view exposition, std::string_view name) {
  double total = 0;
  size_t at = 0;
  while (at < exposition.size()) {
    size_t end = exposition.find('\n', at);
    if (end == std::string_view::npos) end = exposition.size();
    const std::string_view line = exposition.substr(at, end - at);
    at = end + 1;
    if (line.size() <= name.size() || !line.starts_with(name)) continue;
    const char next = line[name.size()];
    if (next != '{' && next != ' ') continue;  // another metric with this prefix
    const size_t space = line.rfind(' ');
    if (space == std::string_view::npos) continue;
    // A sample line ends in its value; a line whose last field is not a number is skipped.
    const std::string value(line.substr(space + 1));
    char* parsed_to = nullptr;
    const double v = std::strtod(value.c_str(), &parsed_to);
    if (!value.empty() && parsed_to == value.c_str() + value.size()) total += v;
  }
  return total;
}

OperatorWork OperatorWorkOf(std::string_view exposition) {
  OperatorWork w;
  w.reconciles = MetricTotal(exposition, "controller_runtime_reconcile_total");
  w.retries = MetricTotal(exposition, "workqueue_retries_total");
  w.queue_seconds = MetricTotal(exposition, "workqueue_queue_duration_seconds_sum");
  w.queue_count = MetricTotal(exposition, "workqueue_queue_duration_seconds_count");
  w.work_seconds = MetricTotal(exposition, "workqueue_work_duration_seconds_sum");
  w.work_count = MetricTotal(exposition, "workqueue_work_duration_seconds_count");
  return w;
}

OperatorWork operator-(const OperatorWork& after, const OperatorWork& before) {
  return {after.reconciles - before.reconciles,       after.retries - before.retries,
          after.queue_seconds - before.queue_seconds, after.queue_count - before.queue_count,
          after.work_seconds - before.work_seconds,   after.work_count - before.work_count};
}

OperatorWork operator+(const OperatorWork& a, const OperatorWork& b) {
  return {a.reconciles + b.reconciles,       a.retries + b.retries,
          a.queue_seconds + b.queue_seconds, a.queue_count + b.queue_count,
          a.work_seconds + b.work_seconds,   a.work_count + b.work_count};
}

std::vector<Row> WorkRows(size_t n, size_t released, const OperatorWork& work) {
  const std::string at = fmt::format(" (N = {})", n);
  auto mean = [](double sum, double count) { return count > 0 ? sum / count : 0.0; };
  return {
      {"operator: reconciles per released pod" + at,
       fmt::format("{:.2f}", released > 0 ? work.reconciles / static_cast<double>(released) : 0),
       "", "", "", std::nullopt},
      {"operator: queue wait per reconcile, mean" + at,
       FormatSeconds(mean(work.queue_seconds, work.queue_count)), "", "", "", std::nullopt},
      {"operator: reconcile time, mean" + at,
       FormatSeconds(mean(work.work_seconds, work.work_count)), "", "", "", std::nullopt},
      {"operator: retries" + at, fmt::format("{:.0f}", work.retries), "", "", "", std::nullopt},
  };
}

}  // namespace kmt::bench
