// controller/cache_memory_bench.cc — heap taken by the operator's caches, per object kind
// (DESIGN.md §6: ≤ 24 MiB RSS with 10,000 target pods, 10,000 VMIMs and 5,000 nodes cached).
// For each kind alone, then for all of them together, seeds the in-memory API server, syncs an
// InformerView over it and prints the heap the caches added (glibc mallinfo2, after
// malloc_trim): in total and per object. The objects are shaped as bench/memory_benchmark's
// (bench/kubevirt_objects.cc): KubeVirt nodes with node-labeller's ~110 labels, gated target
// virt-launcher pods with KubeVirt's affinity, VMIMs with a term, running launcher pods.
//
//   bazel run //controller:cache_memory_bench -- [vmims] [nodes] [bound_pods]
#include <malloc.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "base/clock.h"
#include "controller/informer_view.h"
#include "controller/testing/objects.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace {

using namespace kmt::controller::testing;  // NOLINT: fixtures

size_t HeapInUse() {
  malloc_trim(0);
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

std::string Num(int i) { return std::to_string(i); }

// A KubeVirt node: node-labeller's cpu-model / cpu-feature labels, the same on every node of a
// CPU model, next to each node's own hostname and its zone.
json KubevirtNode(int i) {
  NodeSpec spec{"node-" + Num(i)};
  spec.labels = {{"kubernetes.io/arch", "amd64"},
                 {"kubernetes.io/os", "linux"},
                 {"kubevirt.io/schedulable", "true"},
                 {"topology.kubernetes.io/zone", "zone-" + Num(i % 3)},
                 {"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS", "true"},
                 {"host-model-cpu.node.kubevirt.io/Skylake-Client-IBRS", "true"},
                 {"cpu-vendor.node.kubevirt.io/Intel", "true"},
                 {"cpu-timer.node.kubevirt.io/tsc-frequency", "2400000000"}};
  for (int f = 0; f < 90; ++f)
    spec.labels["cpu-feature.node.kubevirt.io/feature-" + Num(f)] = "true";
  for (int m = 0; m < 20; ++m) spec.labels["cpu-model.node.kubevirt.io/model-" + Num(m)] = "true";
  if (i % 10 == 0) spec.labels["node-labeller.kubevirt.io/obsolete-host-model"] = "true";
  json n = Node(spec);
  n["status"]["allocatable"] = {{"cpu", "32"},
                                {"memory", "256Gi"},
                                {"pods", "110"},
                                {"ephemeral-storage", "400Gi"},
                                {"devices.kubevirt.io/kvm", "1k"},
                                {"devices.kubevirt.io/tun", "1k"},
                                {"devices.kubevirt.io/vhost-net", "1k"}};
  return n;
}

// A virt-launcher pod of VM i as KubeVirt writes it: its labels, node selector, tolerations,
// the compute container's requests; a target pod (job_uid set) also KubeVirt's affinity.
json Launcher(int i, const std::string& job_uid, bool gated, const std::string& node) {
  const std::string vmi = "0000" + Num(100000 + i) + "-1111-2222-3333-444455556666";
  json p = Pod({.name = "virt-launcher-vm-" + Num(i) + (job_uid.empty() ? "-source" : "-target"),
                .job_uid = job_uid,
                .gated = gated,
                .node = node});
  p["metadata"].erase("uid");
  p["metadata"].erase("resourceVersion");
  p["metadata"].erase("creationTimestamp");
  json& labels = p["metadata"]["labels"];
  if (job_uid.empty()) labels.erase("kubevirt.io/migrationJobUID");
  labels["kubevirt.io/created-by"] = vmi;
  labels["vm.kubevirt.io/name"] = "vm-" + Num(i);
  labels["kubevirt.io/domain"] = "vm-" + Num(i);
  labels["kubevirt.io/size"] = "small";
  p["metadata"]["annotations"]["kubevirt.io/domain"] = "vm-" + Num(i);
  json& spec = p["spec"];
  spec["nodeSelector"] = {{"kubevirt.io/schedulable", "true"},
                          {"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS", "true"},
                          {"kubernetes.io/arch", "amd64"}};
  spec["tolerations"] = json::parse(R"([
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300}])");
  spec["containers"][0]["resources"] = json::parse(R"({"requests": {"cpu": "400m",
    "memory": "2294Mi", "devices.kubevirt.io/kvm": "1", "devices.kubevirt.io/tun": "1",
    "devices.kubevirt.io/vhost-net": "1", "ephemeral-storage": "50M"}})");
  if (!job_uid.empty()) {
    spec["affinity"] =
        json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": [
          {"key": "node-labeller.kubevirt.io/obsolete-host-model", "operator": "DoesNotExist"}]}]}},
      "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"kubevirt.io/created-by": ")" +
                    vmi + R"("}}, "topologyKey": "kubernetes.io/hostname"}]}})");
  }
  return p;
}

struct Counts {
  int vmims, target_pods, nodes, bound_pods;
};

void Seed(kmt::kube::FakeClient& client, const Counts& c, int node_count) {
  for (int i = 0; i < c.nodes; ++i) client.Create(kmt::kube::kNodes, "", KubevirtNode(i));
  for (int i = 0; i < c.vmims; ++i) {
    json v = Vmim({NodeTerm("node-" + Num(i % node_count))});
    v["metadata"]["name"] = "mig-" + Num(i);
    v["metadata"].erase("uid");
    v["metadata"].erase("resourceVersion");
    client.Create(kmt::kube::kVirtualMachineInstanceMigrations, kNs, v);
  }
  for (int i = 0; i < c.target_pods; ++i) {
    const std::string job_uid = "11111111-aaaa-bbbb-cccc-" + std::to_string(100000000000L + i);
    client.Create(kmt::kube::kPods, kNs, Launcher(i, job_uid, /*gated=*/true, ""));
  }
  for (int i = 0; i < c.bound_pods; ++i) {
    client.Create(kmt::kube::kPods, kNs, Launcher(i, "", false, "node-" + Num(i % node_count)));
  }
}

// The heap an InformerView synced over `c` takes, in bytes (after its watches stopped).
size_t CachedHeap(const Counts& c, int node_count) {
  kmt::kube::FakeClient::Options options;
  options.watch_history = 1;  // the fake's own history is not what we measure
  kmt::kube::FakeClient client(options);
  Seed(client, c, node_count);
  kmt::base::RealClock clock;
  const size_t before = HeapInUse();
  kmt::controller::InformerView view(client, clock);
  view.Start();
  if (!view.WaitForSync(std::chrono::minutes(10))) {
    std::fprintf(stderr, "caches did not sync\n");
    std::exit(1);
  }
  const auto s = view.sizes();
  view.Stop();  // watch threads and their buffers gone; the caches stay
  const size_t after = HeapInUse();
  if (std::cmp_not_equal(s.vmims, c.vmims) || std::cmp_not_equal(s.target_pods, c.target_pods) ||
      std::cmp_not_equal(s.nodes, c.nodes) || std::cmp_not_equal(s.bound_pods, c.bound_pods)) {
    std::fprintf(stderr, "cached %zu VMIMs, %zu target pods, %zu nodes, %zu bound pods\n", s.vmims,
                 s.target_pods, s.nodes, s.bound_pods);
    std::exit(1);
  }
  return after > before ? after - before : 0;
}

// The i-th argument as a count, `fallback` when it is not given; exits on anything else.
int CountArg(int argc, char** argv, int i, int fallback) {
  if (argc <= i) return fallback;
  const std::string_view s = argv[i];
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) {
    std::fprintf(stderr,
                 "usage: cache_memory_bench [vmims] [nodes] [bound_pods]: \"%s\" is not a count\n",
                 argv[i]);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const int vmims = CountArg(argc, argv, 1, 10000);
  const int nodes = CountArg(argc, argv, 2, 5000);
  const int running = CountArg(argc, argv, 3, 10000);
  const int node_names = nodes > 0 ? nodes : 1;
  struct Kind {
    const char* name;
    int count;
    Counts alone;
  };
  const Kind kinds[] = {{"node", nodes, {0, 0, nodes, 0}},
                        {"VMIM", vmims, {vmims, 0, 0, 0}},
                        {"gated target pod", vmims, {0, vmims, 0, 0}},
                        {"bound pod", running, {0, 0, 0, running}}};
  for (const Kind& k : kinds) {
    if (k.count == 0) continue;
    const size_t heap = CachedHeap(k.alone, node_names);
    std::printf("%-17s %6d cached alone: %6.1f MiB, %5.0f B each\n", k.name, k.count,
                static_cast<double>(heap) / (1024.0 * 1024.0), static_cast<double>(heap) / k.count);
  }
  const size_t all = CachedHeap({vmims, vmims, nodes, running}, node_names);
  std::printf("all together (%d VMIMs, %d target pods, %d nodes, %d bound pods): %.1f MiB\n", vmims,
              vmims, nodes, running, static_cast<double>(all) / (1024.0 * 1024.0));
  return 0;
}
