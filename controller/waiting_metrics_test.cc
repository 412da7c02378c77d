// controller/waiting_metrics_test.cc
#include "controller/waiting_metrics.h"

#include <catch2/catch.hpp>
#include <string_view>

#include "api/names.h"
#include "kube/credentials.h"

namespace kmt::controller {
namespace {

using std::chrono::seconds;

std::shared_ptr<const api::MigrationInfo> Vmim(bool placed, std::string_view phase,
                                               const std::string& unschedulable_status,
                                               std::string_view since) {
  auto m = std::make_shared<api::MigrationInfo>();
  m->name = "m";
  if (placed) m->added_term_text = R"({"matchFields":[]})";
  m->phase = phase;
  m->conditions.push_back({"addedNodeSelectorTermApplied", "True", "TermApplied", "", "", ""});
  if (!unschedulable_status.empty()) {
    m->conditions.push_back({std::string(api::kConditionTargetPodUnschedulable),
                             unschedulable_status, "Unschedulable", "", "", since});
  }
  return m;
}

TEST_CASE("SummarizeWaiting counts what waits and how long the oldest has waited") {
  const base::SteadyTime now = base::SteadyTime() + seconds(10'000);
  const base::WallTime wall = *kube::ParseRfc3339("2026-01-01T01:00:00Z");
  const std::vector<base::SteadyTime> gated = {now - seconds(30), now - seconds(900), now};
  auto by_selector =
      std::make_shared<api::MigrationInfo>(*Vmim(false, "Pending", "True", "2026-01-01T00:55:00Z"));
  by_selector->added_node_selector = api::Labels{{"pool", "fast"}};
  const std::vector<std::shared_ptr<const api::MigrationInfo>> vmims = {
      Vmim(true, "Pending", "True", "2026-01-01T00:40:00Z"),      // 20 min: the oldest
      by_selector,                                                // spec.addedNodeSelector, 5 min
      Vmim(true, "Scheduling", "False", "2026-01-01T00:00:00Z"),  // scheduled now
      Vmim(false, "Pending", "True", "2026-01-01T00:00:00Z"),     // plain VMIM: not ours
      Vmim(true, "Failed", "True", "2026-01-01T00:00:00Z"),       // final: nobody waits
      Vmim(true, "Pending", "", ""),                              // no condition yet
      Vmim(true, "Pending", "True", "not a time"),                // counted, no age
      nullptr,
  };
  WaitingSummary w = SummarizeWaiting(gated, vmims, now, wall);
  CHECK(w.gated_target_pods == 3);
  CHECK(w.oldest_gated_seconds == 900);
  CHECK(w.unschedulable_placed == 3);
  CHECK(w.oldest_unschedulable_seconds == 1200);
  // Nothing waits: zeros, not stale values.
  CHECK(SummarizeWaiting({}, {}, now, wall) == WaitingSummary{});
  // A clock step back never shows a negative age.
  CHECK(SummarizeWaiting({now + seconds(5)}, {}, now, wall).oldest_gated_seconds == 0);
}

TEST_CASE("WaitingMetrics exposes the gauges the alerts are written against") {
  base::Registry r;
  WaitingMetrics m(r, "migration-target-operator");
  m.SetReady(true);
  m.SetLeading(true);
  m.SetWaiting({2, 61.5, 1, 600});
  const std::string text = r.Render();
  CAPTURE(text);
  for (const char* line : {
           "kmt_operator_ready 1\n",
           "leader_election_master_status{name=\"migration-target-operator\"} 1\n",
           "kmt_gated_target_pods 2\n",
           "kmt_gated_target_pod_oldest_seconds 61.5\n",
           "kmt_unschedulable_placed_migrations 1\n",
           "kmt_unschedulable_placed_migration_oldest_seconds 600\n",
       }) {
    CHECK(text.find(line) != std::string::npos);
  }
  m.SetLeading(false);
  m.SetReady(false);
  CHECK(r.Render().find("leader_election_master_status{name=\"migration-target-operator\"} 0\n") !=
        std::string::npos);
  CHECK(r.Render().find("kmt_operator_ready 0\n") != std::string::npos);
}

}  // namespace
}  // namespace kmt::controller
