// webhook/vmi_node_cache_memory_bench.cc — heap the webhook's VMI cache takes per VMI: seeds
// the in-memory API server with VMIs as virt-controller keeps them (a few KiB each), syncs a
// VmiNodeCache over it and prints the heap it added (glibc mallinfo2, after malloc_trim), as
// controller/cache_memory_bench does for the controller's caches.
//
//   bazel run -c opt //webhook:vmi_node_cache_memory_bench -- [vmis]
#include <malloc.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "kube/fake_client.h"
#include "kube/resources.h"
#include "webhook/vmi_node_cache.h"

namespace {

using Json = nlohmann::json;

size_t HeapInUse() {
  malloc_trim(0);
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

// VMI vm-<i> running on one of 500 nodes, with what virt-controller writes around it.
Json Vmi(int i) {
  const std::string name = "vm-" + std::to_string(i);
  const std::string node = "node-" + std::to_string(i % 500);
  Json vmi = {
      {"apiVersion", "kubevirt.io/v1"},
      {"kind", "VirtualMachineInstance"},
      {"metadata",
       {{"name", name},
        {"namespace", "vms"},
        {"labels", {{"kubevirt.io/nodeName", node}, {"vm.kubevirt.io/name", name}}},
        {"annotations", {{"kubevirt.io/latest-observed-api-version", "v1"}}},
        {"finalizers", {"kubevirt.io/virtualMachineControllerFinalize", "foregroundDeleteVMI"}}}},
      {"spec",
       {{"domain",
         {{"cpu", {{"cores", 2}, {"model", "host-model"}}},
          {"memory", {{"guest", "2Gi"}}},
          {"resources", {{"requests", {{"memory", "2Gi"}}}}},
          {"devices",
           {{"disks", Json::array({{{"name", "root"}, {"disk", {{"bus", "virtio"}}}}})},
            {"interfaces",
             Json::array({{{"name", "default"}, {"masquerade", Json::object()}}})}}}}},
        {"networks", Json::array({{{"name", "default"}, {"pod", Json::object()}}})},
        {"volumes",
         Json::array({{{"name", "root"}, {"dataVolume", {{"name", name + "-root"}}}}})}}},
      {"status",
       {{"phase", "Running"},
        {"nodeName", node},
        {"qosClass", "Burstable"},
        {"launcherContainerImageVersion", "quay.io/kubevirt/virt-launcher:v1.4.0"},
        {"interfaces",
         Json::array(
             {{{"ipAddress", "10.244.1.7"}, {"mac", "52:54:00:12:34:56"}, {"name", "default"}}})},
        {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}},
                                    {{"type", "LiveMigratable"}, {"status", "True"}}})},
        {"guestOSInfo", {{"id", "fedora"}, {"kernelRelease", "6.8.5"}}}}}};
  return vmi;
}

}  // namespace

int main(int argc, char** argv) {
  int vmis = 10000;
  if (argc > 1) {
    const std::string_view arg = argv[1];
    const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), vmis);
    if (ec != std::errc() || end != arg.data() + arg.size()) vmis = 0;
  }
  if (vmis <= 0) {
    std::fprintf(stderr, "usage: vmi_node_cache_memory_bench [vmis > 0]\n");
    return 2;
  }
  kmt::kube::FakeClient::Options options;
  options.watch_history = 1;  // the fake's own history is not what we measure
  options.record_calls = false;
  kmt::kube::FakeClient client(options);
  for (int i = 0; i < vmis; ++i) {
    const Json vmi = Vmi(i);
    Json stored = client.Create(kmt::kube::kVirtualMachineInstances, "vms", vmi);
    stored["status"] = vmi["status"];  // a create leaves status out, as the API server does
    client.Update(kmt::kube::kVirtualMachineInstances, "vms", stored, "status");
  }
  const size_t before = HeapInUse();
  size_t cached = 0;
  {
    auto cache = std::make_unique<kmt::webhook::VmiNodeCache>(client);
    cache->Start();
    if (!cache->WaitForSync(std::chrono::minutes(5))) {
      std::fprintf(stderr, "the VMI cache did not sync\n");
      return 1;
    }
    cache->Stop();  // the watch thread and its buffers gone; the cache stays
    cached = cache->Size();
    const size_t after = HeapInUse();
    const size_t heap = after > before ? after - before : 0;
    std::printf("VMI cache: %zu VMIs cached, %.2f MiB, %.0f B each\n", cached,
                static_cast<double>(heap) / (1024.0 * 1024.0),
                static_cast<double>(heap) / static_cast<double>(cached));
  }
  return std::cmp_equal(cached, vmis) ? 0 : 1;
}
