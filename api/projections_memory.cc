// Heap bytes per cached projection (DESIGN.md §6: ≤ 32 MiB RSS with 10,000 target pods,
// 10,000 VMIMs and 5,000 nodes cached). Prints per-object costs and the total for that
// cluster. Run: bazel run //api:projections_memory
#include <malloc.h>

#include <cstdio>
#include <string>
#include <vector>

#include "api/projections.h"
#include "base/testing/files.h"

namespace {

using json = nlohmann::json;
using kmt::api::MigrationInfo;
using kmt::api::NodeInfo;
using kmt::api::TargetPod;
using kmt::base::testing::ReadTestJson;

size_t HeapInUse() { return mallinfo2().uordblks; }

// A KubeVirt node: node-labeller's ~110 cpu-feature/model labels plus the usual ones.
json NodeJson(int i) {
  json labels = {{"kubernetes.io/hostname", "node-" + std::to_string(i)},
                 {"kubernetes.io/arch", "amd64"},
                 {"kubevirt.io/schedulable", "true"},
                 {"topology.kubernetes.io/zone", "zone-" + std::to_string(i % 3)}};
  for (int f = 0; f < 110; ++f) {
    labels["cpu-feature.node.kubevirt.io/feature-" + std::to_string(f)] = "true";
  }
  return {
      {"metadata", {{"name", "node-" + std::to_string(i)}, {"labels", labels}}},
      {"spec", {{"taints", {{{"key", "dedicated"}, {"value", "vm"}, {"effect", "NoSchedule"}}}}}},
      {"status",
       {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
        {"allocatable",
         {{"cpu", "64"},
          {"memory", "256Gi"},
          {"pods", "110"},
          {"devices.kubevirt.io/kvm", "1k"},
          {"devices.kubevirt.io/tun", "1k"},
          {"devices.kubevirt.io/vhost-net", "1k"}}}}}};
}

template <typename T, typename Make>
double PerObject(int count, Make make) {
  std::vector<T> objects;
  objects.reserve(static_cast<size_t>(count));
  const size_t before = HeapInUse();
  for (int i = 0; i < count; ++i) objects.push_back(make(i));
  return static_cast<double>(HeapInUse() - before) / count + sizeof(T);
}

}  // namespace

int main() {
  json pod = ReadTestJson("api/testdata/and/one_term.pod.json");
  const json vmim = ReadTestJson("api/testdata/vmim.json");
  auto target = [&](bool gated) {
    return [&, gated](int i) {
      json p = pod;
      p["metadata"]["uid"] = "cfad06b0-b6ec-4b1b-9f88-" + std::to_string(100000000000 + i);
      p["metadata"]["name"] = "virt-launcher-vm-" + std::to_string(i) + "-x7k2q";
      p["metadata"]["labels"]["kubevirt.io/created-by"] =
          "7ac26e32-a799-4eec-9a2a-" + std::to_string(100000000000 + i);
      if (!gated) p["spec"]["schedulingGates"] = json::array();
      return TargetPod::FromJson(p);
    };
  };
  const double node =
      PerObject<NodeInfo>(5000, [](int i) { return NodeInfo::FromJson(NodeJson(i)); });
  const double pod_gated = PerObject<TargetPod>(10000, target(true));
  const double pod_released = PerObject<TargetPod>(10000, target(false));
  const double migration = PerObject<MigrationInfo>(10000, [&](int i) {
    json m = vmim;
    m["metadata"]["name"] = "move-" + std::to_string(i);
    return MigrationInfo::FromJson(m);
  });
  std::printf(
      "bytes per object: node (114 labels) %.0f, target pod gated %.0f, released %.0f, vmim %.0f\n",
      node, pod_gated, pod_released, migration);
  std::printf("5,000 nodes + 10,000 released target pods + 10,000 VMIMs: %.1f MiB\n",
              (5000 * node + 10000 * pod_released + 10000 * migration) / (1024.0 * 1024.0));
  return 0;
}
