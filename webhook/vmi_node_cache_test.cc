// The VMI cache stepped by hand over kube::FakeClient (which trims what it lists and watches
// as the REST client does), and KubeClusterView reading it: hits without an API call or a
// wait, a GET on a miss and before the first list.
#include "webhook/vmi_node_cache.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/blocking.h"
#include "base/fake_clock.h"
#include "kube/fake_client.h"
#include "kube/informer.h"
#include "kube/resources.h"
#include "webhook/kube_cluster_view.h"

namespace kmt::webhook {
namespace {

using OptString = std::optional<std::string>;

// A VMI as virt-controller keeps it: far more than where it runs.
Json Vmi(const std::string& ns, const std::string& name, const std::string& node) {
  Json vmi = {{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachineInstance"}};
  vmi["metadata"] = {{"name", name},
                     {"namespace", ns},
                     {"labels", {{"kubevirt.io/nodeName", node}, {"app", "db"}}},
                     {"annotations", {{"kubevirt.io/latest-observed-api-version", "v1"}}}};
  vmi["spec"] = {
      {"domain",
       {{"resources", {{"requests", {{"memory", "2Gi"}}}}},
        {"devices",
         {{"disks", Json::array({{{"name", "root"}, {"disk", {{"bus", "virtio"}}}}})}}}}},
      {"volumes",
       Json::array({{{"name", "root"}, {"containerDisk", {{"image", "quay.io/fedora"}}}}})}};
  vmi["status"] = {{"phase", "Running"},
                   {"interfaces", Json::array({{{"ipAddress", "10.0.0.7"}, {"name", "default"}}})},
                   {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})}};
  if (!node.empty()) vmi["status"]["nodeName"] = node;
  return vmi;
}

// Created, then its status written (a create leaves status out, as the API server does).
void CreateVmi(kube::FakeClient& client, const Json& vmi) {
  const std::string ns = vmi["metadata"]["namespace"];
  Json stored = client.Create(kube::kVirtualMachineInstances, ns, vmi);
  stored["status"] = vmi["status"];
  client.Update(kube::kVirtualMachineInstances, ns, stored, "status");
}

int Gets(const kube::FakeClient& client) {
  int n = 0;
  for (const auto& c : client.Calls()) n += c.verb == kube::Verb::kGet;
  return n;
}

// Lists (init, one page and done) and opens the watch.
void Sync(VmiNodeCache& cache) {
  for (int i = 0; i < 3; ++i) cache.StepForTest();
  REQUIRE(cache.HasSynced());
}

TEST_CASE("The VMI cache builds a VMI's key, resourceVersion and status.nodeName, nothing else") {
  kube::FakeClient client;
  base::FakeClock clock;
  CreateVmi(client, Vmi("ns1", "vm1", "node-1"));
  // The informer the cache runs, with a projection that keeps what it was given.
  kube::Informer<Json> built(
      client, VmiNodeCache::InformerOptionsFor({}),
      [](const Json& vmi) { return std::make_shared<const Json>(vmi); }, clock);
  for (int i = 0; i < 2; ++i) built.StepForTest();
  REQUIRE(built.HasSynced());
  const auto vmi = built.Get("ns1/vm1");
  REQUIRE(vmi != nullptr);
  // (kind and apiVersion are what the trim keeps of every object: an ERROR event's Status.)
  Json want = {{"apiVersion", "kubevirt.io/v1"},
               {"kind", "VirtualMachineInstance"},
               {"metadata", {{"name", "vm1"}, {"namespace", "ns1"}}},
               {"status", {{"nodeName", "node-1"}}}};
  want["metadata"]["resourceVersion"] = (*vmi)["metadata"]["resourceVersion"];
  CHECK_FALSE(want["metadata"]["resourceVersion"].is_null());
  CHECK(*vmi == want);
  // What FromJson makes of the whole object and of what was built is the same.
  CHECK(VmiPlacement::FromJson(*vmi) == VmiPlacement::FromJson(Vmi("ns1", "vm1", "node-1")));
  CHECK(VmiPlacement::FromJson(Vmi("ns1", "vm1", "")) == VmiPlacement{""});
  CHECK(VmiPlacement::FromJson(Json::array()) == VmiPlacement{""});  // odd JSON: no node
}

TEST_CASE("A cached VMI's node is answered without an API call and without blocking") {
  kube::FakeClient client;
  base::FakeClock clock;
  CreateVmi(client, Vmi("ns1", "vm1", "node-1"));
  CreateVmi(client, Vmi("ns1", "pending", ""));
  VmiNodeCache cache(client, {}, clock);
  KubeClusterView view(client);
  view.SetCachedVmiNodes(
      [&](std::string_view ns, std::string_view name) { return cache.NodeName(ns, name); });

  // Not synced: the cache answers nothing, the view GETs (and so cannot answer without
  // blocking).
  CHECK(cache.NodeName("ns1", "vm1") == std::nullopt);
  client.ClearCalls();
  CHECK(view.VmiNodeName("ns1", "vm1") == OptString("node-1"));
  CHECK(Gets(client) == 1);
  {
    base::NonBlockingScope scope;
    CHECK_THROWS_AS(view.VmiNodeName("ns1", "vm1"), base::WouldBlock);
  }

  Sync(cache);
  CHECK(cache.Size() == 2);
  client.ClearCalls();
  {
    // A hit: from memory, inside the I/O thread's scope.
    base::NonBlockingScope scope;
    CHECK(view.VmiNodeName("ns1", "vm1") == OptString("node-1"));
    CHECK(view.VmiNodeName("ns1", "pending") == OptString(""));  // no node yet: still a hit
  }
  CHECK(client.Calls().empty());
}

TEST_CASE("on_synced reports the first LIST once; a refused LIST reaches on_error only") {
  kube::FakeClient client;
  base::FakeClock clock;
  CreateVmi(client, Vmi("ns1", "vm1", "node-1"));
  CreateVmi(client, Vmi("ns1", "vm2", ""));
  std::vector<size_t> synced;
  std::vector<std::string> errors;
  VmiNodeCacheOptions options;
  options.on_synced = [&](size_t vmis) { synced.push_back(vmis); };
  options.on_error = [&](const kube::KubeError& e) { errors.emplace_back(e.what()); };

  // Without list (the grant missing): no sync is reported, only the error.
  client.FailNext(kube::Verb::kList, 3, kube::ErrorKind::kForbidden);
  VmiNodeCache refused(client, options, clock);
  for (int i = 0; i < 3; ++i) refused.StepForTest();
  CHECK_FALSE(refused.HasSynced());
  CHECK(synced.empty());
  REQUIRE_FALSE(errors.empty());
  CHECK(errors[0].find("403") != std::string::npos);

  VmiNodeCache cache(client, options, clock);
  Sync(cache);
  CHECK(synced == std::vector<size_t>{2});
  CreateVmi(client, Vmi("ns1", "vm3", "node-2"));  // later events report nothing more
  cache.StepForTest();
  CHECK(synced == std::vector<size_t>{2});
}

TEST_CASE("A VMI the cache does not hold is read from the API server") {
  kube::FakeClient client;
  base::FakeClock clock;
  VmiNodeCache cache(client, {}, clock);
  KubeClusterView view(client);
  view.SetCachedVmiNodes(
      [&](std::string_view ns, std::string_view name) { return cache.NodeName(ns, name); });
  Sync(cache);
  // Created a moment ago: its event has not reached the cache.
  CreateVmi(client, Vmi("ns1", "new", "node-3"));
  client.ClearCalls();
  CHECK(cache.NodeName("ns1", "new") == std::nullopt);
  CHECK(view.VmiNodeName("ns1", "new") == OptString("node-3"));
  CHECK(Gets(client) == 1);
  // Nowhere: the GET's 404 says so.
  CHECK(view.VmiNodeName("ns1", "none") == std::nullopt);
  CHECK(Gets(client) == 2);
  // Same name, other namespace: not this VMI.
  CHECK(view.VmiNodeName("ns2", "new") == std::nullopt);
  CHECK(Gets(client) == 3);

  cache.StepForTest();  // ADDED (without a status yet)
  cache.StepForTest();  // MODIFIED: status.nodeName
  client.ClearCalls();
  CHECK(view.VmiNodeName("ns1", "new") == OptString("node-3"));
  CHECK(client.Calls().empty());
}

TEST_CASE("The VMI cache follows a VMI's node and its deletion") {
  kube::FakeClient client;
  base::FakeClock clock;
  CreateVmi(client, Vmi("ns1", "vm1", "node-1"));
  VmiNodeCache cache(client, {}, clock);
  Sync(cache);
  CHECK(cache.NodeName("ns1", "vm1") == OptString("node-1"));

  // Migrated: virt-controller moves status.nodeName.
  Json vmi = client.Get(kube::kVirtualMachineInstances, "ns1", "vm1");
  vmi["status"]["nodeName"] = "node-2";
  client.Update(kube::kVirtualMachineInstances, "ns1", vmi, "status");
  cache.StepForTest();
  CHECK(cache.NodeName("ns1", "vm1") == OptString("node-2"));

  client.Delete(kube::kVirtualMachineInstances, "ns1", "vm1");
  cache.StepForTest();
  CHECK(cache.NodeName("ns1", "vm1") == std::nullopt);
  CHECK(cache.Size() == 0);
}

}  // namespace
}  // namespace kmt::webhook
