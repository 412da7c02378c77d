#include "bench/memory_rows.h"

#include <fmt/format.h>

#include "bench/stats.h"

namespace kmt::bench {

namespace {
constexpr const char* kKinds[3] = {"node", "VMIM", "target pod"};
}  // namespace

std::vector<Row> MemoryRows(const MemoryFigures& f) {
  const auto full = static_cast<double>(f.rss_after[2]);
  const auto empty = static_cast<double>(f.rss_empty);
  std::vector<Row> rows = {
      {fmt::format("RSS with {} nodes, {} VMIMs, {} target pods cached", f.counts[0], f.counts[1],
                   f.counts[2]),
       FormatBytes(full), FormatBytes(empty), FormatRatio(Ratio(full, empty)),
       "≤ " + FormatBytes(kMemoryBudgetBytes), full <= kMemoryBudgetBytes},
  };
  uint64_t before = f.rss_empty;
  for (size_t k = 0; k < 3; ++k) {
    const double grown = static_cast<double>(f.rss_after[k]) - static_cast<double>(before);
    const double per = f.counts[k] == 0 ? 0 : grown / static_cast<double>(f.counts[k]);
    rows.push_back({fmt::format("bytes per cached {} (vs its JSON size)", kKinds[k]),
                    FormatBytes(per), FormatBytes(f.json_bytes[k]) + " JSON",
                    FormatRatio(Ratio(per, f.json_bytes[k])), "", std::nullopt});
    before = f.rss_after[k];
  }
  return rows;
}

std::vector<std::string> MemoryNotes(const MemoryFigures& f) {
  return {
      fmt::format(
          "RSS = VmRSS of //cmd/operator:operator (out of cluster, --disable-webhook, a follower: "
          "a Lease held by another identity keeps it from reconciling), the largest of 6 "
          "samples over 3 s after /readyz reports the caches synced (with every object loaded, "
          "the largest over the cold starts below). Floor = the same binary "
          "and flags synced on the same cluster before the objects were created ({}). "
          "Restarted after each batch; bytes per object = RSS growth of that batch ÷ its "
          "count, next to the mean JSON size of the object as the API server returned it "
          "(with managedFields). Target pods are gated (the operator keeps their patch basis, "
          "the heaviest projection). Each VMIM's VMI was created first (KubeVirt's virt-api "
          "refuses a VMIM whose VMI does not exist; virt-controller stopped, so they stay "
          "Pending); the operator caches no VMIs. Loading everything took {:.0f} s.",
          FormatBytes(static_cast<double>(f.rss_empty)), f.load_seconds),
  };
}

namespace {
size_t Objects(const ColdStartFigures& f) { return f.counts[0] + f.counts[1] + f.counts[2]; }
}  // namespace

std::vector<Row> ColdStartRows(const ColdStartFigures& f) {
  const double time_ratio = Ratio(f.seconds, f.floor_seconds);
  const double cpu_budget = kColdStartCpuSecondsPerObject * static_cast<double>(Objects(f));
  return {
      {fmt::format("time from exec to /readyz with {} nodes, {} VMIMs, {} target pods", f.counts[0],
                   f.counts[1], f.counts[2]),
       FormatSeconds(f.seconds), FormatSeconds(f.floor_seconds), FormatRatio(time_ratio),
       fmt::format("≤ {:.1f}× floor", kColdStartTimeBudgetRatio),
       f.floor_seconds > 0 && time_ratio <= kColdStartTimeBudgetRatio},
      {"CPU from exec to /readyz (user + system)", fmt::format("{:.2f} CPU-s", f.cpu_seconds),
       fmt::format("{:.2f} CPU-s", f.floor_cpu_seconds),
       FormatRatio(Ratio(f.cpu_seconds, f.floor_cpu_seconds)),
       fmt::format("≤ {:.2f} CPU-s", cpu_budget), f.cpu_seconds <= cpu_budget},
  };
}

std::vector<std::string> ColdStartNotes(const ColdStartFigures& f) {
  return {
      fmt::format(
          "The operator of the last memory figure (same flags: a follower with "
          "--disable-webhook, whose caches readiness waits for), from posix_spawn to the first "
          "200 of /readyz (asked every {:.0f} ms); CPU = utime + stime of /proc/<pid>/stat read "
          "right after that answer. Floor = the LISTs its informers make (nodes; VMIMs; pods "
          "with the target-pod label selector; all namespaces), concurrently, {} items a page "
          "as the operator pages, each page read whole and parsed by nlohmann's SAX parser into "
          "nothing: {} pages, {}. {} passes, interleaved (an operator start, then a floor pass "
          "once it stopped, and again), so that a change of the machine's load moves both "
          "sides; each side's figures are the least time and the least CPU of its passes. "
          "CPU floor = the listing threads' CPU, of which the parses "
          "took {:.2f} CPU-s (reading the bytes alone costs the rest). CPU budget: half of the 7 "
          "CPU-s issue 41 measured with 25,000 objects, "
          "scaled to the {} objects here.",
          f.poll_seconds * 1000, f.page_size, f.floor_requests,
          FormatBytes(static_cast<double>(f.floor_bytes)), f.passes, f.floor_parse_cpu_seconds,
          Objects(f)),
  };
}

}  // namespace kmt::bench
