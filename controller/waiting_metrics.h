// controller/waiting_metrics.h — the gauges an on-call person alerts on (manifests/monitoring),
// beyond the queue and reconcile counters: is this replica ready, does it lead, and what waits.
//
//   kmt_operator_ready                                  1 while /readyz would answer 200
//   leader_election_master_status{name}                 1 while this replica holds the Lease
//                                                       (client-go's name, as controller-runtime
//                                                       exports it)
//   kmt_gated_target_pods                               target pods still holding the gate
//   kmt_gated_target_pod_oldest_seconds                 how long the oldest of them has held it,
//                                                       since this replica first saw the pod
//   kmt_unschedulable_placed_migrations                 placed migrations (a term or
//                                                       spec.addedNodeSelector, not final) whose
//                                                       targetPodUnschedulable is True
//   kmt_unschedulable_placed_migration_oldest_seconds   the longest of them, since the
//                                                       condition's lastTransitionTime
//
// The "oldest" gauges are 0 when nothing waits. The waiting gauges are computed from the
// informer caches when /metrics is scraped (SummarizeWaiting is the pure part); every replica
// caches the same objects, so every replica reports them, leader or not.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/projections.h"
#include "base/clock.h"
#include "base/metrics.h"

namespace kmt::controller {

struct WaitingSummary {
  size_t gated_target_pods = 0;
  double oldest_gated_seconds = 0;
  size_t unschedulable_placed = 0;
  double oldest_unschedulable_seconds = 0;
  bool operator==(const WaitingSummary&) const = default;
};

// `gated_seen_at`: when each target pod that still holds the gate was first seen. `vmims`: the
// cached VMIMs. Ages before `now`/`wall_now` only (a clock step back counts as 0); an
// unparsable lastTransitionTime counts the migration with age 0.
WaitingSummary SummarizeWaiting(const std::vector<base::SteadyTime>& gated_seen_at,
                                const std::vector<std::shared_ptr<const api::MigrationInfo>>& vmims,
                                base::SteadyTime now, base::WallTime wall_now);

class WaitingMetrics {
 public:
  WaitingMetrics(base::Registry& registry, const std::string& lease_name);
  void SetReady(bool ready) { ready_.Set(ready ? 1 : 0); }
  void SetLeading(bool leading) { leading_.Set(leading ? 1 : 0); }
  void SetWaiting(const WaitingSummary& w);

 private:
  base::Gauge& ready_;
  base::Gauge& leading_;
  base::Gauge& gated_;
  base::Gauge& oldest_gated_;
  base::Gauge& unschedulable_;
  base::Gauge& oldest_unschedulable_;
};

}  // namespace kmt::controller
