// bench/memory_rows.h — the memory benchmark's figures and table rows: the operator's memory,
// and its cold start (exec → /readyz 200) after the last batch.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/report.h"

namespace kmt::bench {

inline constexpr double kMemoryBudgetBytes = 24.0 * 1024 * 1024;  // DESIGN.md §6

// Stages in order: nodes, VMIMs, target pods (each adds to the previous).
struct MemoryFigures {
  std::array<size_t, 3> counts{};       // objects created per stage
  std::array<double, 3> json_bytes{};   // mean JSON size of one object as the server returned it
  uint64_t rss_empty = 0;               // floor: caches synced on the cluster before the objects
  std::array<uint64_t, 3> rss_after{};  // after each stage
  double load_seconds = 0;              // creating every object
};

// RSS with everything cached against the floor (budget ≤ 24 MiB), then per kind the bytes
// per cached object (RSS growth of its stage ÷ its count) next to the object's JSON size
// (ratio = cached bytes ÷ JSON bytes).
std::vector<Row> MemoryRows(const MemoryFigures& f);
std::vector<std::string> MemoryNotes(const MemoryFigures& f);

// Issue 41's cold-start budget: CPU ≤ half of the 7 CPU-s measured with 25,000 objects,
// scaled to the objects present (quick mode has a tenth of them).
inline constexpr double kColdStartCpuSecondsPerObject = 3.5 / 25000;
inline constexpr double kColdStartTimeBudgetRatio = 1.5;  // × the floor's time

// The operator started with every object present, until /readyz answered 200, next to the
// floor (bench/list_floor.h) measured in the same run.
struct ColdStartFigures {
  std::array<size_t, 3> counts{};  // nodes, VMIMs, target pods present
  double seconds = 0;              // exec → /readyz 200
  double cpu_seconds = 0;          // utime + stime of the operator at that moment
  double floor_seconds = 0;
  double floor_cpu_seconds = 0;
  double floor_parse_cpu_seconds = 0;  // of floor_cpu_seconds, the parses
  uint64_t floor_bytes = 0;
  size_t floor_requests = 0;
  int passes = 1;  // each side is the best of this many passes, interleaved
  int64_t page_size = 0;
  double poll_seconds = 0;  // how often /readyz was asked
};

// Time against the floor's (budget ≤ 1.5×), CPU against the floor's (budget: the scaled
// 3.5 CPU-s).
std::vector<Row> ColdStartRows(const ColdStartFigures& f);
std::vector<std::string> ColdStartNotes(const ColdStartFigures& f);

}  // namespace kmt::bench
