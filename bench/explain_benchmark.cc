// Explainer throughput (DESIGN.md §6: ≥ 1,000,000 node evaluations per second) against a
// floor measured in the same process: a loop doing one label lookup per node over the same
// 5,000 KWOK-like KubeVirt nodes.
//
//   bazel-bin/bench/explain_benchmark [--report=FILE] [--nodes=5000] [--benchmark_min_time=0.5]
#include <benchmark/benchmark.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench/explain_cluster.h"
#include "bench/report.h"

namespace kmt::bench {
namespace {

int g_nodes = 5000;
constexpr int kPodsPerNode = 8;

const ExplainCluster& TheCluster() {
  static const ExplainCluster* c = new ExplainCluster(g_nodes, kPodsPerNode);
  return *c;
}

void BM_ExplainerEvaluate(benchmark::State& state) {
  const ExplainCluster& c = TheCluster();
  const api::Explainer e(c.pod, &c.term, c.source_node, c.nodes, c.bound);
  for (auto _ : state) benchmark::DoNotOptimize(EvaluateAll(e));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(c.nodes.size()));
}

void BM_FloorOneLabel(benchmark::State& state) {
  const ExplainCluster& c = TheCluster();
  for (auto _ : state) benchmark::DoNotOptimize(CountSchedulable(c.nodes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(c.nodes.size()));
}

// What the controller does per unschedulable target pod: build, evaluate all, summarise.
void BM_ExplainerBuildAndSummarize(benchmark::State& state) {
  const ExplainCluster& c = TheCluster();
  for (auto _ : state) {
    const api::Explainer e(c.pod, &c.term, c.source_node, c.nodes, c.bound);
    benchmark::DoNotOptimize(e.Summarize(10));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(c.nodes.size()));
}

// The pre-flight of a drain (issue 39): 100 VMs on the source node placed one after another.
constexpr int kDrainVms = 100;

const api::MigrationTargetPolicy& ZonePolicy() {
  static const api::MigrationTargetPolicy* p = [] {
    auto* policy = new api::MigrationTargetPolicy;
    policy->name = "zones-0-1";
    policy->term = TheCluster().term;
    return policy;
  }();
  return *p;
}

const std::vector<api::DrainVm>& TheDrainVms() {
  static const auto* vms =
      new std::vector<api::DrainVm>(DrainVms(TheCluster(), kDrainVms, &ZonePolicy()));
  return *vms;
}

void BM_DrainPlan(benchmark::State& state) {
  const ExplainCluster& c = TheCluster();
  const std::vector<api::DrainVm>& vms = TheDrainVms();
  for (auto _ : state) {
    const api::DrainPlan plan =
        api::PlanDrain({.node = c.source_node, .nodes = c.nodes, .bound = c.bound}, vms);
    if (plan.leaving != vms.size()) state.SkipWithError("some VM found no node");
    benchmark::DoNotOptimize(plan.nodes.data());
  }
}

void BM_FloorExplainEachAlone(benchmark::State& state) {
  const ExplainCluster& c = TheCluster();
  const std::vector<api::DrainVm>& vms = TheDrainVms();
  for (auto _ : state) benchmark::DoNotOptimize(ExplainEachAlone(c, vms));
}

// Prints as the console reporter does and keeps items/s per benchmark.
class CapturingReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> items_per_second;
  std::map<std::string, double> seconds_per_iteration;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      auto it = r.counters.find("items_per_second");
      if (it != r.counters.end()) items_per_second[r.benchmark_name()] = it->second.value;
      if (r.iterations > 0) {
        seconds_per_iteration[r.benchmark_name()] =
            r.real_accumulated_time / static_cast<double>(r.iterations);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace
}  // namespace kmt::bench

int main(int argc, char** argv) {
  using namespace kmt::bench;
  std::string report;
  CLI::App app{"The explainer's and the drain plan's speed (other flags: Google Benchmark's)",
               "explain_benchmark"};
  app.allow_extras();  // --benchmark_*: Google Benchmark's own
  app.add_option("--report", report, "Write the result table to this file");
  app.add_option("--nodes", g_nodes, "Nodes of the cluster explained")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::vector<std::string> rest = app.remaining();
  std::vector<char*> kept{argv[0]};
  for (std::string& a : rest) kept.push_back(a.data());
  argc = static_cast<int>(kept.size());
  argv = kept.data();
  benchmark::RegisterBenchmark("BM_ExplainerEvaluate", BM_ExplainerEvaluate)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_FloorOneLabel", BM_FloorOneLabel)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_ExplainerBuildAndSummarize", BM_ExplainerBuildAndSummarize)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_DrainPlan", BM_DrainPlan)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_FloorExplainEachAlone", BM_FloorExplainEachAlone)
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  std::fprintf(stderr, "Building %d nodes with %d bound pods each...\n", g_nodes, kPodsPerNode);
  (void)TheCluster();
  CapturingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  const double evals = reporter.items_per_second["BM_ExplainerEvaluate"];
  const double floor = reporter.items_per_second["BM_FloorOneLabel"];
  std::vector<Row> rows = ExplainerRows(evals, floor);
  const double build = reporter.seconds_per_iteration["BM_ExplainerBuildAndSummarize"];
  rows.push_back({"build + evaluate all + summarise (per unschedulable pod)", FormatSeconds(build),
                  "", "", "", std::nullopt});
  const double plan = reporter.seconds_per_iteration["BM_DrainPlan"];
  const double alone = reporter.seconds_per_iteration["BM_FloorExplainEachAlone"];
  rows.push_back(DrainPlanRow(kDrainVms, plan, alone));
  std::string table = MarkdownTable(
      "Explainer (Google Benchmark)", rows,
      {"Data: " + std::to_string(g_nodes) +
           " KWOK-like KubeVirt nodes (~125 labels; cordoned, "
           "NotReady and tainted ones mixed in), " +
           std::to_string(kPodsPerNode) +
           " bound virt-launcher pods per node, a zone term. Floor: one label lookup per node over "
           "the same projections. Ratio = explainer time per node ÷ floor time per node.",
       "Drain plan: " + std::to_string(kDrainVms) +
           " live-migratable VMs on one node, steered by a policy with the zone term, placed "
           "one after another with every node's verdict rendered (kubectl migrate policy "
           "explain NODE). Its floor is one explainer pass per VM (build, evaluate every node) "
           "without capacity accounting; ratio = plan time ÷ floor time."});
  std::printf("\n%s", table.c_str());
  AppendToFile(report, table);
  return evals > 0 && floor > 0 && plan > 0 && alone > 0 ? 0 : 1;
}
