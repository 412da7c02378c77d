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
#include <string_view>
#include <utility>
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
  // Where that span went, in seconds: first to last create call returning, and from the last
  // create call to the last release (for the progress lines).
  std::pair<double, double> Spans() const;

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

// Rows for one N: p50, p99, max and throughput of the operator against the floor. Budgets,
// each requiring every pod released in both runs: p99 ≤ 1.3 × floor at N = 200 (DESIGN.md
// §6) and ≤ 1.2 × floor at N = 50, and throughput within 10 % of the floor's at both (issue
// 41); none at other sizes.
std::vector<Row> GateRows(const GateRun& op, const GateRun& floor);

// The middle of rounds of one N, run interleaved with the other side's (operator, floor,
// operator, floor, …), so that a change of the machine's load during the benchmark moves
// both sides instead of one: each latency figure and the throughput the median of the
// rounds' (nearest rank: the lower middle of an even count), released the least of them
// (every pod of every round, or the budget fails). Empty rounds → a GateRun of zeros.
GateRun MedianRun(const std::vector<GateRun>& rounds);

// With more than one round, one row per N with each round's p99 and throughput ratios
// (operator round i against floor round i), so the spread behind the medians shows; none
// for a single round.
std::vector<Row> RoundRows(const std::vector<GateRun>& op, const std::vector<GateRun>& floor);

// Where the operator's time went in one run, from its /metrics (the difference of a scrape
// after the run and one before it).
struct OperatorWork {
  double reconciles = 0;     // controller_runtime_reconcile_total, every result
  double retries = 0;        // workqueue_retries_total
  double queue_seconds = 0;  // workqueue_queue_duration_seconds: added → picked up
  double queue_count = 0;
  double work_seconds = 0;  // workqueue_work_duration_seconds: one reconcile
  double work_count = 0;
};

// The sum of every sample of metric `name` (all label sets) in a Prometheus text exposition;
// 0 when there is none.
double MetricTotal(std::string_view exposition, std::string_view name);
OperatorWork OperatorWorkOf(std::string_view exposition);
OperatorWork operator-(const OperatorWork& after, const OperatorWork& before);
// Two runs' work together (the rounds of one N).
OperatorWork operator+(const OperatorWork& a, const OperatorWork& b);

// Rows for one N: reconciles per released pod, mean queue wait and mean reconcile time, and
// retries: what the latency above is made of.
std::vector<Row> WorkRows(size_t n, size_t released, const OperatorWork& work);

}  // namespace kmt::bench
