#include "bench/explain_cluster.h"

#include "bench/kubevirt_objects.h"
#include "bench/stats.h"

namespace kmt::bench {

ExplainCluster::ExplainCluster(int n, int pods_per_node) {
  nodes.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) nodes.push_back(api::NodeInfo::FromJson(KwokNode(i)));
  bound.reserve(static_cast<size_t>(n) * static_cast<size_t>(pods_per_node));
  for (int i = 0; i < n * pods_per_node; ++i) {
    bound.push_back(api::BoundPod::FromJson(BoundLauncherPod(i, "vms", NodeName(i % n))));
  }
  source_node = NodeName(7 % n);
  pod = api::TargetPod::FromJson(TargetPod(7, "vms", "mig-7", "uid-7", source_node, true));
  term = api::NodeSelectorTerm{{{"topology.kubernetes.io/zone", "In", {"zone-0", "zone-1"}}}, {}};
}

size_t CountSchedulable(const std::vector<api::NodeInfo>& nodes) {
  size_t n = 0;
  for (const api::NodeInfo& node : nodes) {
    const std::string* v = node.labels.Find("kubevirt.io/schedulable");
    if (v != nullptr && *v == "true") ++n;
  }
  return n;
}

api::ReasonMask EvaluateAll(const api::Explainer& e) {
  api::ReasonMask acc = 0;
  for (size_t i = 0; i < e.node_count(); ++i) acc |= e.Evaluate(i);
  return acc;
}

std::vector<Row> ExplainerRows(double evaluations_per_s, double floor_per_s) {
  // Time per node is 1/rate, so the cost ratio is floor rate ÷ explainer rate.
  const double ratio = Ratio(floor_per_s, evaluations_per_s);
  return {
      {"node evaluations/s (Explainer::Evaluate)", FormatRate(evaluations_per_s),
       FormatRate(floor_per_s), FormatRatio(ratio), "≥ 1.00 M/s",
       evaluations_per_s >= kExplainerBudget},
  };
}

std::vector<api::DrainVm> DrainVms(const ExplainCluster& c, int count,
                                   const api::MigrationTargetPolicy* policy) {
  std::vector<api::DrainVm> vms;
  vms.reserve(static_cast<size_t>(count));
  for (int k = 0; k < count; ++k) {
    const int i = 1000 + k;
    api::DrainVm vm;
    vm.ns = "vms";
    vm.name = "vm-" + std::to_string(i);
    vm.strategy = api::EvictionStrategy::kLiveMigrate;
    vm.migratability.migratable = true;
    vm.pod = api::TargetPod::FromJson(TargetPod(i, "vms", "mig-" + std::to_string(i),
                                                "uid-" + std::to_string(i), c.source_node, false));
    vm.policy = policy;
    vms.push_back(std::move(vm));
  }
  return vms;
}

size_t ExplainEachAlone(const ExplainCluster& c, const std::vector<api::DrainVm>& vms) {
  size_t leaving = 0;
  for (const api::DrainVm& vm : vms) {
    const api::Explainer e(*vm.pod, vm.policy ? &vm.policy->term : nullptr, c.source_node, c.nodes,
                           c.bound);
    size_t fitting = 0;  // a whole pass, as the plan judges every node
    for (size_t i = 0; i < e.node_count(); ++i) {
      if (e.Evaluate(i) == 0 && c.nodes[i].name != c.source_node) ++fitting;
    }
    if (fitting > 0) ++leaving;
  }
  return leaving;
}

Row DrainPlanRow(int vms, double plan_seconds, double floor_seconds) {
  return {"drain plan of " + std::to_string(vms) + " VMs (PlanDrain, capacity accounted)",
          FormatSeconds(plan_seconds),
          FormatSeconds(floor_seconds),
          FormatRatio(Ratio(plan_seconds, floor_seconds)),
          "",
          std::nullopt};
}

}  // namespace kmt::bench
