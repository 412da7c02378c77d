#include "webhook/kube_cluster_view.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::webhook {
namespace {

Json Node(const std::string& name, const std::string& zone) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"topology.kubernetes.io/zone", zone}}}}}};
}

TEST_CASE("KubeClusterView reads a migration, or nothing when it is gone") {
  kube::FakeClient client;
  client.Create(kube::kVirtualMachineInstanceMigrations, "ns1",
                {{"apiVersion", "kubevirt.io/v1"},
                 {"kind", "VirtualMachineInstanceMigration"},
                 {"metadata", {{"name", "mig-1"}, {"namespace", "ns1"}}},
                 {"spec", {{"vmiName", "vm1"}}}});
  KubeClusterView view(client);
  auto found = view.GetMigration("ns1", "mig-1");
  REQUIRE(found.has_value());
  CHECK((*found)["spec"]["vmiName"] == "vm1");
  CHECK_FALSE((*found)["metadata"]["uid"].get<std::string>().empty());
  CHECK_FALSE(view.GetMigration("ns2", "mig-1").has_value());
  CHECK_FALSE(view.GetMigration("ns1", "mig-2").has_value());

  client.FailNext(kube::Verb::kGet, 1, kube::ErrorKind::kUnavailable);
  CHECK_THROWS_AS(view.GetMigration("ns1", "mig-1"), kube::KubeError);
  client.FailNext(kube::Verb::kGet, 1, kube::ErrorKind::kForbidden);
  CHECK_THROWS_AS(view.GetMigration("ns1", "mig-1"), kube::KubeError);
}

TEST_CASE("KubeClusterView lists every node across pages") {
  kube::FakeClient client;
  for (int i = 1; i <= 5; ++i) {
    client.Create(kube::kNodes, "", Node("node-" + std::to_string(i), i % 2 ? "a" : "b"));
  }
  KubeClusterView view(client, /*page_size=*/2, /*node_list_ttl=*/std::chrono::milliseconds(0));
  auto nodes = view.ListNodes();
  REQUIRE(nodes.size() == 5);
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const auto& n : nodes) names.push_back(n.name);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"node-1", "node-2", "node-3", "node-4", "node-5"});
  for (const auto& n : nodes) {
    CAPTURE(n.name);
    const std::string* zone = n.labels.Find("topology.kubernetes.io/zone");
    REQUIRE(zone != nullptr);
    CHECK(*zone == ((n.name.back() - '0') % 2 ? "a" : "b"));
  }
  client.FailNext(kube::Verb::kList, 1, kube::ErrorKind::kForbidden);
  CHECK_THROWS_AS(view.ListNodes(), kube::KubeError);
}

TEST_CASE("KubeClusterView reuses a node list within its TTL") {
  kube::FakeClient client;
  for (int i = 1; i <= 3; ++i) client.Create(kube::kNodes, "", Node("node-" + std::to_string(i), "a"));
  KubeClusterView view(client, /*page_size=*/2, /*node_list_ttl=*/std::chrono::hours(1));
  client.ClearCalls();
  CHECK(view.ListNodes().size() == 3);
  CHECK(client.Calls().size() == 2);  // two pages
  client.Create(kube::kNodes, "", Node("node-4", "b"));
  client.ClearCalls();
  CHECK(view.ListNodes().size() == 3);  // reused: no LIST within the TTL
  CHECK(client.Calls().empty());
  KubeClusterView fresh(client, /*page_size=*/2, /*node_list_ttl=*/std::chrono::milliseconds(0));
  CHECK(fresh.ListNodes().size() == 4);
}

TEST_CASE("KubeClusterView reads where a VMI runs") {
  kube::FakeClient client;
  client.Create(kube::kVirtualMachineInstances, "ns1",
                {{"apiVersion", "kubevirt.io/v1"},
                 {"kind", "VirtualMachineInstance"},
                 {"metadata", {{"name", "vm1"}, {"namespace", "ns1"}}}});
  KubeClusterView view(client);
  CHECK(view.VmiNodeName("ns1", "vm1") == std::optional<std::string>(""));
  Json vmi = client.Get(kube::kVirtualMachineInstances, "ns1", "vm1");
  vmi["status"] = {{"nodeName", "node-1"}, {"phase", "Running"}};
  client.Update(kube::kVirtualMachineInstances, "ns1", vmi, "status");
  CHECK(view.VmiNodeName("ns1", "vm1") == std::optional<std::string>("node-1"));
  CHECK(view.VmiNodeName("ns1", "vm2") == std::nullopt);
  client.FailNext(kube::Verb::kGet, 1, kube::ErrorKind::kUnavailable);
  CHECK_THROWS_AS(view.VmiNodeName("ns1", "vm1"), kube::KubeError);
}

}  // namespace
}  // namespace kmt::webhook
