// controller/waiting_metrics.cc
#include "controller/waiting_metrics.h"

#include <algorithm>
#include <chrono>

#include "api/names.h"
#include "kube/credentials.h"

namespace kmt::controller {
namespace {

bool Placed(const api::MigrationInfo& m) {
  return m.added_term_text.has_value() || !m.added_node_selector.empty();
}

double SecondsSince(std::chrono::nanoseconds d) {
  return std::max(0.0, std::chrono::duration<double>(d).count());
}

}  // namespace

WaitingSummary SummarizeWaiting(const std::vector<base::SteadyTime>& gated_seen_at,
                                const std::vector<std::shared_ptr<const api::MigrationInfo>>& vmims,
                                base::SteadyTime now, base::WallTime wall_now) {
  WaitingSummary w;
  for (base::SteadyTime seen : gated_seen_at) {
    ++w.gated_target_pods;
    w.oldest_gated_seconds = std::max(w.oldest_gated_seconds, SecondsSince(now - seen));
  }
  for (const auto& m : vmims) {
    if (!m || !Placed(*m) || m->Final()) continue;
    for (const api::MigrationCondition& c : m->conditions) {
      if (c.type != api::kConditionTargetPodUnschedulable || c.status != api::kStatusTrue) continue;
      ++w.unschedulable_placed;
      if (auto since = kube::ParseRfc3339(c.last_transition_time)) {
        w.oldest_unschedulable_seconds =
            std::max(w.oldest_unschedulable_seconds, SecondsSince(wall_now - *since));
      }
      break;
    }
  }
  return w;
}

WaitingMetrics::WaitingMetrics(base::Registry& r, const std::string& lease_name)
    : ready_(r.AddGauge("kmt_operator_ready",
                        "Whether this replica is ready (its caches synced, its webhook "
                        "certificate loaded), as /readyz reports")
                 .WithLabels({})),
      leading_(r.AddGauge("leader_election_master_status",
                          "Gauge of if the reporting system is master of the relevant lease, 0 "
                          "indicates backup, 1 indicates master. 'name' is the string used to "
                          "identify the lease. Please make sure to group by name.",
                          {"name"})
                   .WithLabels({lease_name})),
      gated_(r.AddGauge("kmt_gated_target_pods",
                        "Migration target pods that still hold the scheduling gate")
                 .WithLabels({})),
      oldest_gated_(r.AddGauge("kmt_gated_target_pod_oldest_seconds",
                               "How long the oldest gated target pod has held the gate, since "
                               "this replica first saw it (0 when none)")
                        .WithLabels({})),
      unschedulable_(r.AddGauge("kmt_unschedulable_placed_migrations",
                                "Placed migrations (not final) whose target pod the scheduler "
                                "cannot place (targetPodUnschedulable=True)")
                         .WithLabels({})),
      oldest_unschedulable_(
          r.AddGauge("kmt_unschedulable_placed_migration_oldest_seconds",
                     "How long the longest-unschedulable placed migration has been so, since "
                     "its targetPodUnschedulable condition turned True (0 when none)")
              .WithLabels({})) {}

void WaitingMetrics::SetWaiting(const WaitingSummary& w) {
  gated_.Set(static_cast<double>(w.gated_target_pods));
  oldest_gated_.Set(w.oldest_gated_seconds);
  unschedulable_.Set(static_cast<double>(w.unschedulable_placed));
  oldest_unschedulable_.Set(w.oldest_unschedulable_seconds);
}

}  // namespace kmt::controller
