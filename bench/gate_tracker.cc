#include "bench/gate_tracker.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/names.h"
#include "api/term_and.h"

namespace kmt::bench {

bool Released(const nlohmann::json& pod, const api::NodeSelectorTerm& term) {
  return !api::PodHasGate(pod, api::kSchedulingGate) && api::PodCarriesTerm(pod, term);
}

GateTracker::GateTracker(api::NodeSelectorTerm term, size_t expected)
    : term_(std::move(term)), expected_(expected) {}

void GateTracker::Created(const std::string& pod_name, SteadyTime t) {
  std::lock_guard<std::mutex> lock(mu_);
  created_.emplace(pod_name, t);
  cv_.notify_all();
}

bool GateTracker::Observe(const nlohmann::json& pod, SteadyTime t) {
  if (!pod.contains("metadata") || !Released(pod, term_)) return false;
  const std::string name = pod["metadata"].value("name", "");
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
  return released_.size();
}

std::vector<double> GateTracker::Latencies() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<double> out;
  for (const auto& [name, created] : created_) {
    auto it = released_.find(name);
    if (it == released_.end()) continue;
    out.push_back(std::max(0.0, std::chrono::duration<double>(it->second - created).count()));
  }
  return out;
}

double GateTracker::Throughput() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (created_.empty() || released_.empty()) return 0;
  SteadyTime first = created_.begin()->second;
  for (const auto& [name, t] : created_) first = std::min(first, t);
  SteadyTime last = released_.begin()->second;
  for (const auto& [name, t] : released_) last = std::max(last, t);
  const double span = std::chrono::duration<double>(last - first).count();
  return span <= 0 ? 0 : static_cast<double>(released_.size()) / span;
}

std::vector<Row> GateRows(const GateRun& op, const GateRun& floor) {
  const std::string at = fmt::format(" (N = {})", op.n);
  const bool budgeted = op.n == 200;
  const bool complete = op.released == op.n && floor.released == floor.n;
  return {
      {"p50" + at, FormatSeconds(op.latency.p50), FormatSeconds(floor.latency.p50),
       FormatRatio(Ratio(op.latency.p50, floor.latency.p50)), "", std::nullopt},
      {"p99" + at, FormatSeconds(op.latency.p99), FormatSeconds(floor.latency.p99),
       FormatRatio(Ratio(op.latency.p99, floor.latency.p99)), budgeted ? "≤ 2× floor" : "",
       budgeted ? std::optional<bool>(complete && op.latency.p99 <= 2 * floor.latency.p99)
                : std::nullopt},
      {"max" + at, FormatSeconds(op.latency.max), FormatSeconds(floor.latency.max),
       FormatRatio(Ratio(op.latency.max, floor.latency.max)), "", std::nullopt},
      {"throughput" + at, FormatRate(op.throughput), FormatRate(floor.throughput),
       FormatRatio(Ratio(floor.throughput, op.throughput)), "", std::nullopt},
      {"released / created" + at, fmt::format("{} / {}", op.released, op.n),
       fmt::format("{} / {}", floor.released, floor.n), "", budgeted ? "all" : "",
       budgeted ? std::optional<bool>(complete) : std::nullopt},
  };
}

}  // namespace kmt::bench
