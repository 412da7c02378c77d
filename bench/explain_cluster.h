// bench/explain_cluster.h — the data of the explainer benchmark and the rows it reports.
//
// A cluster of KWOK-like KubeVirt nodes (bench/kubevirt_objects.h) with virt-launcher pods
// bound to them, the target pod of a VM migrating off node 7, and a zone term. The floor is
// the cheapest per-node loop over the same projections: one label lookup per node.
#pragma once

#include <cstddef>
#include <vector>

#include "api/drain_plan.h"
#include "api/explain.h"
#include "api/policy.h"
#include "api/projections.h"
#include "bench/report.h"

namespace kmt::bench {

struct ExplainCluster {
  std::vector<api::NodeInfo> nodes;
  std::vector<api::BoundPod> bound;
  api::TargetPod pod;
  api::NodeSelectorTerm term;
  std::string source_node;

  // `nodes` nodes with `pods_per_node` bound virt-launcher pods each.
  ExplainCluster(int nodes, int pods_per_node);
};

// The floor: how many nodes carry kubevirt.io/schedulable=true (one label lookup each).
size_t CountSchedulable(const std::vector<api::NodeInfo>& nodes);

// Every node's reason mask ORed (the hot path the controller runs per unschedulable pod).
api::ReasonMask EvaluateAll(const api::Explainer& e);

inline constexpr double kExplainerBudget = 1e6;  // evaluations/s, DESIGN.md §6

// The explainer's table rows: evaluations/s against the floor's, ratio = explainer time
// per node ÷ floor time per node, budget ≥ 1,000,000/s.
std::vector<Row> ExplainerRows(double evaluations_per_s, double floor_per_s);

// The drain plan's data: `count` live-migratable VMs (LiveMigrate) on the cluster's source
// node, each with its own target pod (vm-1000.., so their labels and anti-affinity differ),
// all steered by `policy` (may be null).
std::vector<api::DrainVm> DrainVms(const ExplainCluster& c, int count,
                                   const api::MigrationTargetPolicy* policy);

// The floor of the drain plan: one explainer pass per VM (build, evaluate every node) with
// no capacity accounting between them. Returns how many VMs have some node that fits.
size_t ExplainEachAlone(const ExplainCluster& c, const std::vector<api::DrainVm>& vms);

// The drain plan's row: plan time against the floor's, ratio = plan ÷ floor; no budget.
Row DrainPlanRow(int vms, double plan_seconds, double floor_seconds);

}  // namespace kmt::bench
