#include "bench/memory_rows.h"

#include <fmt/format.h>

#include "bench/stats.h"

namespace kmt::bench {

namespace {
constexpr const char* kKinds[3] = {"node", "VMIM", "target pod"};
}  // namespace

std::vector<Row> MemoryRows(const MemoryFigures& f) {
  const double full = static_cast<double>(f.rss_after[2]);
  const double empty = static_cast<double>(f.rss_empty);
  std::vector<Row> rows = {
      {fmt::format("RSS with {} nodes, {} VMIMs, {} target pods cached", f.counts[0], f.counts[1],
                   f.counts[2]),
       FormatBytes(full), FormatBytes(empty), FormatRatio(Ratio(full, empty)), "≤ 32.0 MiB",
       full <= kMemoryBudgetBytes},
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
          "samples over 3 s after /readyz reports the caches synced. Floor = the same binary "
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

}  // namespace kmt::bench
