// bench/explain_cluster.h — the data of the explainer benchmark and the rows it reports.
//
// A cluster of KWOK-like KubeVirt nodes (bench/kubevirt_objects.h) with virt-launcher pods
// bound to them, the target pod of a VM migrating off node 7, and a zone term. The floor is
// the cheapest per-node loop over the same projections: one label lookup per node.
#pragma once

#include <cstddef>
#include <vector>

#include "api/explain.h"
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

}  // namespace kmt::bench
