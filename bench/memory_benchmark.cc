// The operator's memory with its caches synced from the real API server (DESIGN.md §6:
// ≤ 24 MiB RSS with 10,000 target pods, 10,000 VMIMs and 5,000 nodes cached), against a
// floor measured in the same run: the same binary, same flags, caches synced on the same
// cluster before the objects exist.
//
// The operator runs out of cluster as a follower: a Lease held by another identity keeps it
// from leading, so it syncs its caches (readiness waits for that) but reconciles nothing,
// and the measurement is the caches, not work in flight. It is restarted after each batch
// of objects, so every figure is a fresh sync: empty → + nodes → + VMIMs → + target pods;
// with everything loaded it is started kColdStarts times, each start followed by a pass of
// the cold-start floor (interleaved: a change of load moves both sides).
// Each VMIM's VMI is created just before it (virt-api refuses a VMIM whose VMI does not
// exist); the operator caches no VMIs, so they are in no figure. virt-controller must be
// stopped (bench/run.sh does), or it would start the VMIs and fail their VMIMs.
//
//   memory_benchmark --kubeconfig=K --operator=bazel-bin/cmd/operator/operator
//       [--nodes=5000] [--vmims=10000] [--pods=10000] [--report=FILE] [--log-dir=DIR (created)]
//       [--port-base=30790 (the operator's metrics port; health is the next one)]
//       [--cold-start-only [--starts=3]]
//
// --cold-start-only measures only the cold start, on the objects an earlier run left in the
// cluster (loading 25,000 objects takes minutes): it renews the held Lease, starts the
// operator --starts times and prints each start's time and CPU next to the floor, to compare
// binaries on one cluster.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

#include "api/names.h"
#include "base/clock.h"
#include "base/poll.h"
#include "bench/cluster_ops.h"
#include "bench/kubevirt_objects.h"
#include "bench/list_floor.h"
#include "bench/live_admission.h"
#include "bench/memory_rows.h"
#include "bench/operator_process.h"
#include "controller/informer_view.h"
#include "kube/error.h"
#include "kube/kubeconfig.h"
#include "kube/resources.h"

namespace kmt::bench {
namespace {

constexpr const char* kNs = "bench-memory";
constexpr const char* kLease = "kmt-bench-held";
// How often /readyz is asked: the cold-start figure is late by up to this much.
constexpr std::chrono::milliseconds kReadyPoll{10};
// Cold starts with every object present, each followed by a floor pass.
constexpr int kColdStarts = 3;

struct Started {
  uint64_t rss = 0;
  double ready_seconds = 0;  // exec → /readyz 200
  double cpu_seconds = 0;    // the operator's CPU at that moment
};

Started MeasureOperator(const std::string& bin, const std::string& kubeconfig,
                        const std::string& log, int metrics_port) {
  const int health_port = metrics_port + 1;
  OperatorProcess op(
      bin,
      {"--kubeconfig=" + kubeconfig, "--leader-elect=true",
       std::string("--leader-election-namespace=") + kNs,
       std::string("--leader-election-id=") + kLease, "--disable-webhook",
       fmt::format("--health-probe-bind-address=127.0.0.1:{}", health_port),
       fmt::format("--metrics-bind-address=127.0.0.1:{}", metrics_port), "--metrics-secure=false"},
      log);
  if (!op.WaitReady(health_port, std::chrono::seconds(300), kReadyPoll)) {
    throw std::runtime_error("the operator did not become ready (caches not synced); see " + log);
  }
  Started s;
  s.ready_seconds = op.SecondsSinceSpawn();
  s.cpu_seconds = ProcessCpuSeconds(op.pid());
  // Let the allocator settle after the initial LIST pages are freed; keep the largest of
  // a few samples (what a memory limit has to allow).
  int looks = 0;  // the first, at once, is not a sample: six follow, 500 ms apart
  base::PollUntil(base::SystemClock(), std::chrono::seconds(3), std::chrono::milliseconds(500),
                  [&] {
                    if (looks++ > 0) s.rss = std::max<uint64_t>(s.rss, op.RssBytes().value_or(0));
                    return looks > 6;
                  });
  return s;
}

// The floor of the cold start: the operator's informer LISTs (controller/informer_view.cc),
// with its page size.
ListFloor MeasureFloor(const std::string& kubeconfig) {
  kube::KubeconfigOptions ko;
  ko.explicit_path = kubeconfig;
  const std::string target_pods = std::string(api::kLabelApp) + "=" +
                                  std::string(api::kLabelAppValue) + "," +
                                  std::string(api::kLabelMigrationJobUID);
  return MeasureListFloor(kube::LoadClientConfig(ko),
                          {{kube::kNodes, ""},
                           {kube::kVirtualMachineInstanceMigrations, ""},
                           {kube::kPods, target_pods}},
                          controller::InformerViewOptions().page_size);
}

// `starts` cold starts of the operator, each followed by a floor pass (interleaved, so that a
// change of the machine's load during the benchmark moves both sides): for each side the
// least time and the least CPU, each the stricter; the operator's RSS the largest (what a
// memory limit has to allow). `each` is told every start.
struct ColdStarts {
  Started op;
  ListFloor floor;
};
ColdStarts MeasureColdStarts(const std::string& operator_bin, const std::string& kubeconfig,
                             const std::string& log, int port_base, int starts,
                             const std::function<void(int, const Started&)>& each = {}) {
  ColdStarts best;
  for (int i = 0; i < starts; ++i) {
    const Started s = MeasureOperator(operator_bin, kubeconfig, log, port_base);
    if (each) each(i + 1, s);
    const ListFloor f = MeasureFloor(kubeconfig);
    if (i == 0) {
      best = {s, f};
      continue;
    }
    best.op.ready_seconds = std::min(best.op.ready_seconds, s.ready_seconds);
    best.op.cpu_seconds = std::min(best.op.cpu_seconds, s.cpu_seconds);
    best.op.rss = std::max(best.op.rss, s.rss);
    best.floor.seconds = std::min(best.floor.seconds, f.seconds);
    if (f.cpu_seconds < best.floor.cpu_seconds) {
      best.floor.cpu_seconds = f.cpu_seconds;
      best.floor.parse_cpu_seconds = f.parse_cpu_seconds;
    }
  }
  return best;
}

// --cold-start-only: the objects are there; the Lease is renewed so the operator stays a
// follower for another hour.
int ColdStartOnly(kube::KubeClient& client, const std::string& operator_bin,
                  const std::string& kubeconfig, const std::string& log, int port_base,
                  int starts) {
  Json lease = client.Get(kube::kLeases, kNs, kLease);
  lease["spec"]["renewTime"] = base::FormatMicroTime(base::SystemClock().WallNow());
  client.Update(kube::kLeases, kNs, lease);
  const ColdStarts best = MeasureColdStarts(
      operator_bin, kubeconfig, log, port_base, starts, [](int i, const Started& s) {
        std::printf("start %d: %.2f s, %.2f CPU-s to /readyz, RSS %s\n", i, s.ready_seconds,
                    s.cpu_seconds, FormatBytes(static_cast<double>(s.rss)).c_str());
        std::fflush(stdout);
      });
  std::printf(
      "best: %.2f s, %.2f CPU-s; floor %.2f s, %.2f CPU-s (%.2f CPU-s parsing; %zu items, "
      "best of %d, interleaved)\n",
      best.op.ready_seconds, best.op.cpu_seconds, best.floor.seconds, best.floor.cpu_seconds,
      best.floor.parse_cpu_seconds, best.floor.items, starts);
  return 0;
}

int Main(int argc, char** argv) {
  std::string kubeconfig, operator_bin, report, log_dir = "/tmp";
  size_t nodes = 5000, vmims = 10000, pods = 10000;
  int port_base = 30790;
  CLI::App app{"The operator's memory at scale", "memory_benchmark"};
  app.add_option("--kubeconfig", kubeconfig, "The cluster's admin kubeconfig")->required();
  app.add_option("--operator", operator_bin, "The operator binary")->required();
  app.add_option("--report", report, "Write the result table to this file");
  app.add_option("--log-dir", log_dir, "Where the operator's log goes")->capture_default_str();
  app.add_option("--nodes", nodes, "Nodes to create")->capture_default_str();
  app.add_option("--vmims", vmims, "VMIMs to create")->capture_default_str();
  app.add_option("--pods", pods, "Pods to create")->capture_default_str();
  app.add_option("--port-base", port_base, "The operator's metrics port (health: the next one)")
      ->capture_default_str();
  bool cold_start_only = false;
  int starts = 3;
  app.add_flag("--cold-start-only", cold_start_only,
               "Only the cold start, on the objects an earlier run left");
  app.add_option("--starts", starts, "Starts to measure with --cold-start-only")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  CheckListenPorts(port_base, port_base + 1);
  EnsureLogDir(log_dir);
  auto client = MakeUnthrottledClient(kubeconfig);
  if (cold_start_only) {
    return ColdStartOnly(*client, operator_bin, kubeconfig, log_dir + "/memory-operator.log",
                         port_base, starts);
  }
  // The floor must be an empty cluster: wait for earlier runs' namespaces (the gate release
  // benchmark's VMIMs and pods) to be gone.
  WaitNoMigrations(*client, std::chrono::seconds(180));
  EnsureNamespace(*client, kNs);
  client->Create(kube::kLeases, kNs,
                 {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", kLease}, {"namespace", kNs}}},
                  {"spec",
                   {{"holderIdentity", "kmt-bench-holder"},
                    {"leaseDurationSeconds", 3600},
                    {"acquireTime", base::FormatMicroTime(base::SystemClock().WallNow())},
                    {"renewTime", base::FormatMicroTime(base::SystemClock().WallNow())}}}});
  const std::string log = log_dir + "/memory-operator.log";
  MemoryFigures f;
  f.counts = {nodes, vmims, pods};

  f.rss_empty = MeasureOperator(operator_bin, kubeconfig, log, port_base).rss;
  std::fprintf(stderr, "empty: %s\n", FormatBytes(static_cast<double>(f.rss_empty)).c_str());

  const auto load = [&](size_t n, const std::function<Json(size_t)>& create) {
    std::vector<size_t> sizes(n);
    ParallelFor(n, 32, [&](size_t i) { sizes[i] = create(i).dump().size(); });
    double total = 0;
    for (size_t s : sizes) total += static_cast<double>(s);
    return n == 0 ? 0.0 : total / static_cast<double>(n);
  };
  const base::Stopwatch t0;
  f.json_bytes[0] = load(nodes, [&](size_t i) {
    return client->Create(kube::kNodes, "", KwokNode(static_cast<int>(i)));
  });
  f.rss_after[0] = MeasureOperator(operator_bin, kubeconfig, log, port_base).rss;
  std::fprintf(stderr, "+nodes: %s\n", FormatBytes(static_cast<double>(f.rss_after[0])).c_str());
  std::vector<Json> created_vmims(vmims);
  ParallelFor(vmims, 32, [&](size_t i) {
    client->Create(kube::kVirtualMachineInstances, kNs, Vmi(static_cast<int>(i), kNs));
  });
  f.json_bytes[1] = load(vmims, [&](size_t i) {
    created_vmims[i] =
        client->Create(kube::kVirtualMachineInstanceMigrations, kNs,
                       Vmim(static_cast<int>(i), kNs,
                            NodeTerm(NodeName(static_cast<int>(i % std::max<size_t>(nodes, 1))))));
    return created_vmims[i];
  });
  f.rss_after[1] = MeasureOperator(operator_bin, kubeconfig, log, port_base).rss;
  std::fprintf(stderr, "+vmims: %s\n", FormatBytes(static_cast<double>(f.rss_after[1])).c_str());
  f.json_bytes[2] = load(pods, [&](size_t i) {
    const Json& v = created_vmims[i % std::max<size_t>(vmims, 1)];
    return client->Create(
        kube::kPods, kNs,
        TargetPod(static_cast<int>(i), kNs, v["metadata"]["name"], v["metadata"]["uid"],
                  NodeName(static_cast<int>(i % std::max<size_t>(nodes, 1))),
                  /*gated=*/true));
  });
  f.load_seconds = t0.ElapsedSeconds();
  const ColdStarts cold = MeasureColdStarts(operator_bin, kubeconfig, log, port_base, kColdStarts);
  const Started& last = cold.op;
  f.rss_after[2] = last.rss;
  std::fprintf(stderr, "+pods: %s\n", FormatBytes(static_cast<double>(f.rss_after[2])).c_str());

  ColdStartFigures c;
  c.counts = f.counts;
  c.seconds = last.ready_seconds;
  c.cpu_seconds = last.cpu_seconds;
  const ListFloor& floor = cold.floor;
  c.floor_seconds = floor.seconds;
  c.floor_cpu_seconds = floor.cpu_seconds;
  c.floor_parse_cpu_seconds = floor.parse_cpu_seconds;
  c.floor_bytes = floor.bytes;
  c.floor_requests = floor.requests;
  c.passes = kColdStarts;
  c.page_size = controller::InformerViewOptions().page_size;
  c.poll_seconds = base::Seconds(kReadyPoll);
  std::fprintf(stderr, "cold start: %.2f s, %.2f CPU-s; floor %.2f s, %.2f CPU-s (%zu items)\n",
               c.seconds, c.cpu_seconds, c.floor_seconds, c.floor_cpu_seconds, floor.items);

  const std::string table =
      MarkdownTable("Operator memory (real API server)", MemoryRows(f), MemoryNotes(f)) +
      MarkdownTable("Operator cold start (real API server)", ColdStartRows(c), ColdStartNotes(c));
  std::printf("\n%s", table.c_str());
  AppendToFile(report, table);
  return 0;
}

}  // namespace
}  // namespace kmt::bench

int main(int argc, char** argv) {
  try {
    return kmt::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memory_benchmark: %s\n", e.what());
    return 1;
  }
}
