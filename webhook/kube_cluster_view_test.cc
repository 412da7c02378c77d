#include "webhook/kube_cluster_view.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/names.h"
#include "base/fake_clock.h"
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

TEST_CASE("KubeClusterView answers a migration ref from the cache only when the uid matches") {
  kube::FakeClient client;
  Json live = client.Create(
      kube::kVirtualMachineInstanceMigrations, "ns1",
      {{"apiVersion", "kubevirt.io/v1"},
       {"kind", "VirtualMachineInstanceMigration"},
       {"metadata",
        {{"name", "mig-1"},
         {"namespace", "ns1"},
         {"annotations",
          {{std::string(api::kAddedTermAnnotation),
            R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]})"}}}}},
       {"spec", {{"vmiName", "vm1"}}}});
  const std::string uid = live["metadata"]["uid"];
  KubeClusterView view(client);
  auto gets = [&] {
    int n = 0;
    for (const auto& c : client.Calls()) n += c.verb == kube::Verb::kGet;
    return n;
  };
  // The cache's projection of the same object says the same.
  CHECK(MigrationRefOf(api::MigrationInfo::FromJson(live)) == MigrationRef{uid, true});
  // No cache: a GET, the term read from the object.
  CHECK(view.GetMigrationRef("ns1", "mig-1", uid) == MigrationRef{uid, true});
  CHECK(gets() == 1);
  std::optional<MigrationRef> cached;
  view.SetCachedMigrations([&](std::string_view ns, std::string_view name) {
    return ns == "ns1" && name == "mig-1" ? cached : std::nullopt;
  });
  // Not in the cache yet: a GET.
  CHECK(view.GetMigrationRef("ns1", "mig-1", uid) == MigrationRef{uid, true});
  CHECK(gets() == 2);
  // In the cache with the pod's uid: no GET.
  cached = MigrationRef{uid, true};
  CHECK(view.GetMigrationRef("ns1", "mig-1", uid) == MigrationRef{uid, true});
  CHECK(gets() == 2);
  // The cache holds an older migration of that name: the live one decides.
  cached = MigrationRef{"old-uid", false};
  CHECK(view.GetMigrationRef("ns1", "mig-1", uid) == MigrationRef{uid, true});
  CHECK(gets() == 3);
  // Gone from the API server, and the cache is not asked about another uid.
  CHECK_FALSE(view.GetMigrationRef("ns1", "mig-2", "x").has_value());
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
  const NodeList list = view.ListNodes();
  const auto& nodes = *list;
  REQUIRE(nodes.size() == 5);
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const auto& n : nodes) names.push_back(n->name);
  std::ranges::sort(names);
  CHECK(names == std::vector<std::string>{"node-1", "node-2", "node-3", "node-4", "node-5"});
  for (const auto& n : nodes) {
    CAPTURE(n->name);
    const std::string* zone = n->labels.Find("topology.kubernetes.io/zone");
    REQUIRE(zone != nullptr);
    CHECK(*zone == ((n->name.back() - '0') % 2 ? "a" : "b"));
  }
  client.FailNext(kube::Verb::kList, 1, kube::ErrorKind::kForbidden);
  CHECK_THROWS_AS(view.ListNodes(), kube::KubeError);
}

TEST_CASE("KubeClusterView reuses a node list within its TTL") {
  kube::FakeClient client;
  for (int i = 1; i <= 3; ++i)
    client.Create(kube::kNodes, "", Node("node-" + std::to_string(i), "a"));
  KubeClusterView view(client, /*page_size=*/2, /*node_list_ttl=*/std::chrono::hours(1));
  client.ClearCalls();
  CHECK(view.ListNodes()->size() == 3);
  CHECK(client.Calls().size() == 2);  // two pages
  client.Create(kube::kNodes, "", Node("node-4", "b"));
  client.ClearCalls();
  CHECK(view.ListNodes()->size() == 3);  // reused: no LIST within the TTL
  CHECK(client.Calls().empty());
  KubeClusterView fresh(client, /*page_size=*/2, /*node_list_ttl=*/std::chrono::milliseconds(0));
  CHECK(fresh.ListNodes()->size() == 4);
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

TEST_CASE("An expired node list is refreshed by one review while the others keep using it") {
  kube::FakeClient client;
  client.Create(kube::kNodes, "", Node("node-1", "a"));
  base::FakeClock clock;
  KubeClusterView view(client, /*page_size=*/500, /*node_list_ttl=*/std::chrono::milliseconds(1),
                       clock);
  REQUIRE(view.ListNodes()->size() == 1);
  client.Create(kube::kNodes, "", Node("node-2", "a"));
  clock.Advance(std::chrono::milliseconds(5));  // the list expires

  // Hold the refreshing review inside its LIST.
  std::mutex mu;
  std::condition_variable cv;
  bool in_list = false, release = false;
  client.SetCallHook([&](const kube::FakeCall& call) {
    if (call.verb != kube::Verb::kList) return;
    std::unique_lock<std::mutex> lock(mu);
    in_list = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  size_t refreshed = 0;
  std::thread refresher([&] { refreshed = view.ListNodes()->size(); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return in_list; });
  }
  // Meanwhile another review gets the previous list at once, without a LIST of its own.
  CHECK(view.ListNodes()->size() == 1);
  {
    std::scoped_lock lock(mu);
    release = true;
    cv.notify_all();
  }
  refresher.join();
  CHECK(refreshed == 2);
  client.SetCallHook(nullptr);
  CHECK(view.ListNodes()->size() == 2);  // the refreshed list, within its TTL or refreshed
}

TEST_CASE("A failed refresh is the failing review's error; the next review lists again") {
  kube::FakeClient client;
  client.Create(kube::kNodes, "", Node("node-1", "a"));
  base::FakeClock clock;
  KubeClusterView view(client, 500, std::chrono::milliseconds(1), clock);
  REQUIRE(view.ListNodes()->size() == 1);
  client.Create(kube::kNodes, "", Node("node-2", "a"));
  clock.Advance(std::chrono::milliseconds(5));
  client.FailNext(kube::Verb::kList, 1, kube::ErrorKind::kUnavailable);
  CHECK_THROWS_AS(view.ListNodes(), kube::KubeError);
  CHECK(view.ListNodes()->size() == 2);
}

TEST_CASE("Cached nodes, when the source has them, replace the LIST") {
  kube::FakeClient client;
  client.Create(kube::kNodes, "", Node("listed", "a"));
  KubeClusterView view(client, 500, std::chrono::milliseconds(0));
  NodeList cached;  // null: the source has nothing yet (an informer not yet synced)
  view.SetCachedNodes([&] { return cached; });
  REQUIRE(view.ListNodes()->size() == 1);
  CHECK(view.ListNodes()->front()->name == "listed");
  api::NodeInfo n;
  n.name = "cached";
  cached = std::make_shared<const std::vector<std::shared_ptr<const api::NodeInfo>>>(
      std::vector<std::shared_ptr<const api::NodeInfo>>{std::make_shared<const api::NodeInfo>(n)});
  client.ClearCalls();
  CHECK(view.ListNodes()->front()->name == "cached");
  CHECK(client.Calls().empty());
}

}  // namespace
}  // namespace kmt::webhook
