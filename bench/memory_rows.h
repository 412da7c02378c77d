// bench/memory_rows.h — the memory benchmark's figures and table rows.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/report.h"

namespace kmt::bench {

inline constexpr double kMemoryBudgetBytes = 32.0 * 1024 * 1024;  // DESIGN.md §6

// Stages in order: nodes, VMIMs, target pods (each adds to the previous).
struct MemoryFigures {
  std::array<size_t, 3> counts{};       // objects created per stage
  std::array<double, 3> json_bytes{};   // mean JSON size of one object as the server returned it
  uint64_t rss_empty = 0;               // floor: caches synced on the cluster before the objects
  std::array<uint64_t, 3> rss_after{};  // after each stage
  double load_seconds = 0;              // creating every object
};

// RSS with everything cached against the floor (budget ≤ 32 MiB), then per kind the bytes
// per cached object (RSS growth of its stage ÷ its count) next to the object's JSON size
// (ratio = cached bytes ÷ JSON bytes).
std::vector<Row> MemoryRows(const MemoryFigures& f);
std::vector<std::string> MemoryNotes(const MemoryFigures& f);

}  // namespace kmt::bench
