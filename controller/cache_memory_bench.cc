// controller/cache_memory_bench.cc — heap taken by the operator's caches
// (DESIGN.md §6: ≤ 32 MiB RSS with 10,000 target pods, 10,000 VMIMs and
// 5,000 nodes cached). Seeds the in-memory API server, syncs an InformerView,
// and prints the heap the caches added (glibc mallinfo2, after malloc_trim),
// per object kind and in total.
//
//   bazel run //controller:cache_memory_bench -- [vmims] [nodes] [bound_pods]
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <string>

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

json NodeWithLabels(int i) {
  NodeSpec spec{"node-" + std::to_string(i)};
  // KubeVirt's node-labeller: ~100 cpu-feature / model labels, the same on every node.
  for (int f = 0; f < 100; ++f) {
    spec.labels["cpu-feature.node.kubevirt.io/feature-" + std::to_string(f)] = "true";
  }
  spec.labels["topology.kubernetes.io/zone"] = "zone-" + std::to_string(i % 3);
  return Node(spec);
}

}  // namespace

int main(int argc, char** argv) {
  const int vmims = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int nodes = argc > 2 ? std::atoi(argv[2]) : 5000;
  const int running = argc > 3 ? std::atoi(argv[3]) : 10000;
  kmt::kube::FakeClient::Options options;
  options.watch_history = 1;  // the fake's own history is not what we measure
  kmt::kube::FakeClient client(options);
  for (int i = 0; i < nodes; ++i) client.Create(kmt::kube::kNodes, "", NodeWithLabels(i));
  for (int i = 0; i < vmims; ++i) {
    const std::string n = std::to_string(i);
    json v = Vmim({NodeTerm("node-" + std::to_string(i % nodes))});
    v["metadata"]["name"] = "mig-" + n;
    v["metadata"].erase("uid");
    v["metadata"].erase("resourceVersion");
    json created = client.Create(kmt::kube::kVirtualMachineInstanceMigrations, kNs, v);
    json pod = Pod({.name = "virt-launcher-vm-" + n + "-target",
                    .job_uid = created["metadata"]["uid"],
                    .affinity = json::parse(
                        R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                      {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "node-labeller.kubevirt.io/obsolete-host-model", "operator": "DoesNotExist"}]}]}},
                      "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchExpressions": [{"key": "kubevirt.io/created-by",
                          "operator": "In", "values": ["vmi-uid"]}]}, "topologyKey": "kubernetes.io/hostname"}]}})")});
    pod["metadata"].erase("uid");
    pod["metadata"].erase("resourceVersion");
    pod["metadata"].erase("creationTimestamp");
    client.Create(kmt::kube::kPods, kNs, pod);
  }
  for (int i = 0; i < running; ++i) {
    json pod = Pod({.name = "virt-launcher-vm-" + std::to_string(i) + "-source",
                    .job_uid = "",
                    .gated = false,
                    .node = "node-" + std::to_string(i % nodes)});
    pod["metadata"]["labels"].erase("kubevirt.io/migrationJobUID");
    pod["metadata"].erase("uid");
    pod["metadata"].erase("resourceVersion");
    pod["metadata"].erase("creationTimestamp");
    client.Create(kmt::kube::kPods, kNs, pod);
  }

  kmt::base::RealClock clock;
  const size_t before = HeapInUse();
  size_t after = 0;
  {
    kmt::controller::InformerView view(client, clock);
    view.Start();
    if (!view.WaitForSync(std::chrono::minutes(10))) {
      std::fprintf(stderr, "caches did not sync\n");
      return 1;
    }
    auto s = view.sizes();
    view.Stop();  // watch threads and their buffers gone; the caches stay
    after = HeapInUse();
    std::printf("cached: %zu VMIMs, %zu target pods, %zu nodes, %zu bound pods\n", s.vmims,
                s.target_pods, s.nodes, s.bound_pods);
  }
  const double mib = static_cast<double>(after - before) / (1024.0 * 1024.0);
  std::printf("heap taken by the caches: %.1f MiB\n", mib);
  return 0;
}
