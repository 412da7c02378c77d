// Explainer throughput on realistic KubeVirt nodes (DESIGN.md §6: ≥ 1,000,000 node
// evaluations per second). Run:
//   bazel --output_base=... run -c opt //api:explain_benchmark
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "api/explain.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;

// A node as KubeVirt's node-labeller leaves it: ~120 labels, a couple of taints.
json NodeJson(int i) {
  json labels = {{"kubernetes.io/hostname", "node-" + std::to_string(i)},
                 {"kubernetes.io/arch", "amd64"},
                 {"kubernetes.io/os", "linux"},
                 {"kubevirt.io/schedulable", "true"},
                 {"topology.kubernetes.io/zone", "zone-" + std::to_string(i % 3)},
                 {"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS", "true"},
                 {"host-model-cpu.node.kubevirt.io/Skylake-Client-IBRS", "true"},
                 {"cpu-vendor.node.kubevirt.io/Intel", "true"}};
  for (int f = 0; f < 90; ++f)
    labels["cpu-feature.node.kubevirt.io/feature-" + std::to_string(f)] = "true";
  for (int m = 0; m < 20; ++m)
    labels["cpu-model.node.kubevirt.io/model-" + std::to_string(m)] = "true";
  if (i % 10 == 0) labels["node-labeller.kubevirt.io/obsolete-host-model"] = "true";
  json taints = json::array();
  if (i % 7 == 0)
    taints.push_back({{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}});
  if (i % 11 == 0) taints.push_back({{"key", "maintenance"}, {"effect", "NoExecute"}});
  return {{"metadata", {{"name", "node-" + std::to_string(i)}, {"labels", labels}}},
          {"spec", {{"unschedulable", i % 13 == 0}, {"taints", taints}}},
          {"status",
           {{"conditions", {{{"type", "Ready"}, {"status", i % 17 == 0 ? "False" : "True"}}}},
            {"allocatable",
             {{"cpu", "63500m"},
              {"memory", "250Gi"},
              {"pods", "110"},
              {"devices.kubevirt.io/kvm", "1k"},
              {"devices.kubevirt.io/tun", "1k"},
              {"devices.kubevirt.io/vhost-net", "1k"},
              {"ephemeral-storage", "400Gi"}}}}}};
}

struct Cluster {
  std::vector<NodeInfo> nodes;
  std::vector<BoundPod> bound;
  TargetPod pod;
  NodeSelectorTerm term{{{"topology.kubernetes.io/zone", "In", {"zone-0", "zone-1"}}}, {}};

  explicit Cluster(int n) {
    for (int i = 0; i < n; ++i) nodes.push_back(NodeInfo::FromJson(NodeJson(i)));
    for (int i = 0; i < n * 20; ++i) {
      bound.push_back(BoundPod::FromJson(
          {{"metadata",
            {{"namespace", "vms"},
             {"labels", {{"kubevirt.io/created-by", "vmi-" + std::to_string(i)}}}}},
           {"spec",
            {{"nodeName", "node-" + std::to_string(i % n)},
             {"containers",
              {{{"resources",
                 {{"requests",
                   {{"cpu", "3"}, {"memory", "12Gi"}, {"devices.kubevirt.io/kvm", "1"}}}}}}}}}},
           {"status", {{"phase", "Running"}}}}));
    }
    pod = TargetPod::FromJson(json::parse(R"({
      "metadata": {"namespace": "vms", "name": "virt-launcher-rhel9-x7k2q",
                   "labels": {"kubevirt.io/created-by": "vmi-7"}},
      "spec": {
        "nodeSelector": {"kubevirt.io/schedulable": "true", "kubernetes.io/arch": "amd64",
                         "cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS": "true"},
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
                        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}],
        "affinity": {
          "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node-labeller.kubevirt.io/obsolete-host-model", "operator": "DoesNotExist"}]}]}},
          "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"kubevirt.io/created-by": "vmi-7"}}, "topologyKey": "kubernetes.io/hostname"}]}},
        "containers": [{"name": "compute", "resources": {"requests": {"cpu": "4", "memory": "16Gi",
            "devices.kubevirt.io/kvm": "1", "devices.kubevirt.io/tun": "1", "devices.kubevirt.io/vhost-net": "1",
            "ephemeral-storage": "50M"}}}]}})"));
  }
};

const Cluster& TheCluster() {
  static const Cluster* c = new Cluster(5000);
  return *c;
}

void BM_Evaluate(benchmark::State& state) {
  const Cluster& c = TheCluster();
  const Explainer e(c.pod, &c.term, "node-7", c.nodes, c.bound);
  for (auto _ : state) {
    ReasonMask acc = 0;
    for (size_t i = 0; i < e.node_count(); ++i) acc |= e.Evaluate(i);
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(c.nodes.size()));
}
BENCHMARK(BM_Evaluate)->Unit(benchmark::kMicrosecond);

void BM_ExplainAll(benchmark::State& state) {
  const Cluster& c = TheCluster();
  const Explainer e(c.pod, &c.term, "node-7", c.nodes, c.bound);
  for (auto _ : state) benchmark::DoNotOptimize(e.ExplainAll());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(c.nodes.size()));
}
BENCHMARK(BM_ExplainAll)->Unit(benchmark::kMillisecond);

// What the controller does per unschedulable target pod: build, evaluate all, summarise.
void BM_BuildAndSummarize(benchmark::State& state) {
  const Cluster& c = TheCluster();
  for (auto _ : state) {
    const Explainer e(c.pod, &c.term, "node-7", c.nodes, c.bound);
    benchmark::DoNotOptimize(e.Summarize(10));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(c.nodes.size()));
}
BENCHMARK(BM_BuildAndSummarize)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kmt::api

BENCHMARK_MAIN();
