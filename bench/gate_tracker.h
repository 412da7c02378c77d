// bench/gate_tracker.h — per-pod gate release latency for the gate release benchmark.
//
// For every target pod: the instant its create call returned, and the instant a watch
// first saw it released — the scheduling gate gone and the added term in its required node
// affinity (api::PodCarriesTerm). A watch may report the release before the create call's
// answer is read; such a latency counts as 0. Thread-safe: creators and the watch thread
// report concurrently.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/node_selector.h"
#include "bench/report.h"
#include "bench/stats.h"

namespace kmt::bench {

using SteadyTime = std::chrono::steady_clock::time_point;

// The gate is gone and the term is in place.
bool Released(const nlohmann::json& pod, const api::NodeSelectorTerm& term);

class GateTracker {
 public:
  GateTracker(api::NodeSelectorTerm term, size_t expected);

  void Created(const std::string& pod_name, SteadyTime t);
  // One watch event's object; true when it is the pod's first released state.
  bool Observe(const nlohmann::json& pod, SteadyTime t);
  // Waits until every expected pod was created and seen released, or the deadline.
  bool WaitDone(SteadyTime deadline);

  size_t released() const;
  // Per pod with both instants: release − creation in seconds (≥ 0).
  std::vector<double> Latencies() const;
  // Released pods per second, from the first create call returning to the last release.
  double Throughput() const;

 private:
  bool DoneLocked() const;

  const api::NodeSelectorTerm term_;
  const size_t expected_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, SteadyTime> created_, released_;
};

struct GateRun {
  size_t n = 0;
  Summary latency;  // seconds
  double throughput = 0;
  size_t released = 0;
};

// Rows for one N: p50, p99, max and throughput of the operator against the floor; the
// budget (p99 ≤ 2 × floor p99, DESIGN.md §6) is judged at N = 200 and requires every pod
// released in both runs.
std::vector<Row> GateRows(const GateRun& op, const GateRun& floor);

}  // namespace kmt::bench
