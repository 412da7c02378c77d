// kube/cluster_test.cc — the client against a real kube-apiserver. Tagged manual +
// requires-cluster; kube/cluster_check.sh (run by ./hack/test.sh after the e2e tier)
// starts etcd + kube-apiserver from the e2e-built binaries and runs it:
//
//   KMT_KUBECONFIG               admin kubeconfig (required)
//   KMT_APISERVER_RESTART_CMD    restarts kube-apiserver, returns once it is ready
//   KMT_ETCD_COMPACT_CMD         compacts etcd to its current revision
//   KMT_MEMORY_PODS              pods for the memory measurement (default 10000)
//
// The 410 test needs a watch served from etcd (kube-apiserver
// --watch-cache-sizes=pods#0): a watch cache would still serve the old
// resourceVersion after compaction.
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "base/fake_clock.h"
#include "base/poll.h"
#include "kube/error.h"
#include "kube/informer.h"
#include "kube/kubeconfig.h"
#include "kube/paging.h"
#include "kube/resources.h"
#include "kube/rest_client.h"
#include "kube/watcher.h"

namespace kmt::kube {
namespace {

const Resource kServiceAccounts{"", "v1", "serviceaccounts", true, "ServiceAccount"};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

ClientConfig Config() {
  const std::string path = Env("KMT_KUBECONFIG");
  REQUIRE_FALSE(path.empty());
  KubeconfigOptions o;
  o.explicit_path = path;
  return LoadKubeconfig(o);
}

TransportOptions Fast() {
  TransportOptions o;
  o.qps = 500;
  o.burst = 1000;
  o.max_connections = 8;
  return o;
}

// Counts the calls an informer makes, to tell a re-watch from a relist.
class CountingClient : public KubeClient {
 public:
  explicit CountingClient(KubeClient& inner) : inner_(inner) {}
  Json Get(const Resource& r, std::string_view ns, std::string_view n,
           std::string_view s) override {
    return inner_.Get(r, ns, n, s);
  }
  Json List(const Resource& r, std::string_view ns, const ListOptions& o) override {
    ++lists;
    return inner_.List(r, ns, o);
  }
  Json Create(const Resource& r, std::string_view ns, const Json& obj,
              const WriteOptions& o) override {
    return inner_.Create(r, ns, obj, o);
  }
  Json Update(const Resource& r, std::string_view ns, const Json& obj, std::string_view s,
              const WriteOptions& o) override {
    return inner_.Update(r, ns, obj, s, o);
  }
  Json Patch(const Resource& r, std::string_view ns, std::string_view n, PatchType t, const Json& p,
             std::string_view s, const WriteOptions& o) override {
    return inner_.Patch(r, ns, n, t, p, s, o);
  }
  Json Delete(const Resource& r, std::string_view ns, std::string_view n,
              const DeleteOptions& o) override {
    return inner_.Delete(r, ns, n, o);
  }
  std::unique_ptr<WatchStream> Watch(const Resource& r, std::string_view ns,
                                     const WatchOptions& o) override {
    ++watches;
    return inner_.Watch(r, ns, o);
  }
  std::atomic<int> lists{0};
  std::atomic<int> watches{0};

 private:
  KubeClient& inner_;
};

// What the controller keeps of a target pod (DESIGN.md section 4: caches keep
// only the fields used).
struct TargetPodView {
  std::string ns, name, uid, resource_version, job_uid, node;
  bool gated = false;
  std::string phase;
};

std::shared_ptr<const TargetPodView> ProjectPod(const Json& pod) {
  auto v = std::make_shared<TargetPodView>();
  const Json& m = pod.at("metadata");
  v->ns = m.value("namespace", "");
  v->name = m.value("name", "");
  v->uid = m.value("uid", "");
  v->resource_version = m.value("resourceVersion", "");
  v->job_uid = m.value("labels", Json::object()).value("kubevirt.io/migrationJobUID", "");
  const Json spec = pod.value("spec", Json::object());
  v->node = spec.value("nodeName", "");
  v->gated = !spec.value("schedulingGates", Json::array()).empty();
  v->phase = pod.value("status", Json::object()).value("phase", "");
  return v;
}

// A virt-launcher-like target pod: the size of what the cache would be fed.
Json TargetPod(const std::string& name, const std::string& label) {
  return {
      {"metadata",
       {{"name", name},
        {"labels",
         {{"kubevirt.io", "virt-launcher"},
          {"kubevirt.io/migrationJobUID", "6f1c0a0e-3b7e-4c55-9d2e-" + name},
          {"kubevirt.io/created-by", "1b4e28ba-2fa1-11d2-883f-0016d3cca427"},
          {"kmt-test", label}}},
        {"annotations",
         {{"kubevirt.io/migrationJobName", "mig-" + name}, {"kubevirt.io/domain", "vm-" + name}}}}},
      {"spec",
       {{"automountServiceAccountToken", false},
        {"schedulingGates", {{{"name", "migration-target.kubevirt.io/added-node-selector-term"}}}},
        {"nodeSelector", {{"kubevirt.io/schedulable", "true"}}},
        {"tolerations",
         {{{"key", "node.kubernetes.io/unschedulable"},
           {"operator", "Exists"},
           {"effect", "NoSchedule"}}}},
        {"containers",
         {{{"name", "compute"},
           {"image", "registry.invalid/kubevirt/virt-launcher:v1.9.0"},
           {"command", {"/usr/bin/virt-launcher-monitor", "--qemu-timeout", "321s"}},
           {"resources",
            {{"requests", {{"cpu", "100m"}, {"memory", "1Gi"}}},
             {"limits", {{"devices.kubevirt.io/kvm", "1"}}}}}}}}}}};
}

// A namespace per test run, with the service account the admission plugin wants.
std::string MakeNamespace(KubeClient& c, const std::string& prefix) {
  const std::string ns =
      prefix + "-" + std::to_string(getpid()) + "-" +
      std::to_string(base::SystemClock().Now().time_since_epoch().count() % 100000);
  c.Create(kNamespaces, "", {{"metadata", {{"name", ns}}}});
  try {
    c.Create(kServiceAccounts, ns, {{"metadata", {{"name", "default"}}}});
  } catch (const KubeError& e) {
    if (e.kind() != ErrorKind::kConflict) throw;
  }
  return ns;
}

// Polls until the cache matches the server (same keys, same resourceVersions).
bool Converges(KubeClient& c, Informer<TargetPodView>& inf, const std::string& ns,
               const std::string& selector, std::chrono::seconds deadline) {
  // A real server and the informer's own thread: real time.
  return base::PollUntil(base::SystemClock(), deadline, std::chrono::milliseconds(100), [&] {
    ListOptions o;
    o.label_selector = selector;
    Json all = ListAll(c, kPods, ns, o);
    bool same = all["items"].size() == inf.Size();
    for (const Json& p : all["items"]) {
      if (!same) break;
      auto v = inf.Get(ns + "/" + p["metadata"]["name"].get<std::string>());
      same = v && v->resource_version == p["metadata"]["resourceVersion"].get<std::string>();
    }
    return same;
  });
}

InformerOptions PodInformer(const std::string& ns, const std::string& selector) {
  InformerOptions o;
  o.watch.resource = kPods;
  o.watch.ns = ns;
  o.watch.label_selector = selector;
  o.watch.initial_backoff = std::chrono::milliseconds(100);
  o.watch.max_backoff = std::chrono::milliseconds(2000);
  o.on_error = [](const KubeError& e) { std::cerr << "informer: " << e.what() << "\n"; };
  return o;
}

TEST_CASE("Cache converges to the server after 1,000 creates, updates and deletes") {
  RestClient c(Config(), Fast());
  const std::string ns = MakeNamespace(c, "kmt-converge");
  Informer<TargetPodView> inf(c, PodInformer(ns, "kmt-test=converge"), ProjectPod);
  inf.AddIndex("job", [](const Json& p) {
    return std::vector<std::string>{
        p["metadata"]["labels"].value("kubevirt.io/migrationJobUID", "")};
  });
  inf.Start();
  REQUIRE(inf.WaitForSync(std::chrono::seconds(30)));
  int ops = 0;
  for (int i = 0; i < 400; ++i, ++ops) {
    c.Create(kPods, ns, TargetPod("p" + std::to_string(i), "converge"));
  }
  for (int i = 0; i < 400; ++i, ++ops) {
    c.Patch(kPods, ns, "p" + std::to_string(i), PatchType::kMergePatch,
            {{"metadata", {{"annotations", {{"step", std::to_string(i)}}}}}});
  }
  for (int i = 0; i < 400; i += 2, ++ops) c.Delete(kPods, ns, "p" + std::to_string(i));
  CHECK(ops == 1000);
  CHECK(Converges(c, inf, ns, "kmt-test=converge", std::chrono::seconds(60)));
  CHECK(inf.Size() == 200);
  CHECK(inf.KeysByIndex("job", "6f1c0a0e-3b7e-4c55-9d2e-p1") ==
        std::vector<std::string>{ns + "/p1"});
  inf.Stop();
}

TEST_CASE("List+watch catches up after kube-apiserver restarts mid-watch") {
  const std::string restart = Env("KMT_APISERVER_RESTART_CMD");
  REQUIRE_FALSE(restart.empty());
  RestClient rest(Config(), Fast());
  CountingClient c(rest);
  const std::string ns = MakeNamespace(rest, "kmt-restart");
  for (int i = 0; i < 20; ++i)
    rest.Create(kPods, ns, TargetPod("a" + std::to_string(i), "restart"));
  Informer<TargetPodView> inf(c, PodInformer(ns, "kmt-test=restart"), ProjectPod);
  inf.Start();
  REQUIRE(inf.WaitForSync(std::chrono::seconds(30)));
  CHECK(inf.Size() == 20);
  const int lists_before = c.lists;
  // NOLINTNEXTLINE(bugprone-command-processor): the harness' own command line.
  REQUIRE(std::system(restart.c_str()) == 0);

  for (int i = 0; i < 20; ++i)
    rest.Create(kPods, ns, TargetPod("b" + std::to_string(i), "restart"));
  for (int i = 0; i < 10; ++i) rest.Delete(kPods, ns, "a" + std::to_string(i));
  CHECK(Converges(rest, inf, ns, "kmt-test=restart", std::chrono::seconds(60)));
  CHECK(inf.Size() == 30);
  std::cout << "restart: watches opened " << c.watches << ", lists after the restart "
            << (c.lists - lists_before) << "\n";
  inf.Stop();
}

TEST_CASE("A watch from a compacted resourceVersion gets 410 and relists") {
  const std::string compact = Env("KMT_ETCD_COMPACT_CMD");
  REQUIRE_FALSE(compact.empty());
  RestClient c(Config(), Fast());
  const std::string ns = MakeNamespace(c, "kmt-gone");
  c.Create(kPods, ns, TargetPod("old", "gone"));
  WatcherConfig cfg;
  cfg.resource = kPods;
  cfg.ns = ns;
  base::FakeClock clock;  // backoffs are recorded, not waited
  Watcher w(c, cfg, clock);
  w.Step();  // Init
  w.Step();  // the list
  REQUIRE(w.state() == Watcher::State::kInitListed);
  const std::string listed_rv = w.resource_version();
  for (int i = 0; i < 5; ++i) c.Create(kPods, ns, TargetPod("new" + std::to_string(i), "gone"));
  // NOLINTNEXTLINE(bugprone-command-processor): the harness' own command line.
  REQUIRE(std::system(compact.c_str()) == 0);

  std::optional<KubeError> gone;
  for (int i = 0; i < 4 && w.state() != Watcher::State::kEmpty; ++i) {
    WatcherStep s = w.Step();
    if (s.error) gone = s.error;
  }
  REQUIRE(gone.has_value());
  CHECK(gone->kind() == ErrorKind::kGone);
  std::cout << "410: " << gone->what() << "\n";
  CHECK(w.state() == Watcher::State::kEmpty);
  size_t relisted = 0;
  while (w.state() != Watcher::State::kInitListed) {
    for (const WatcherEvent& e : w.Step().events)
      relisted += e.type == WatcherEventType::kInitApply;
  }
  CHECK(relisted == 6);
  CHECK(w.resource_version() != listed_rv);
}

// Bytes the allocator has handed out and not got back (all arenas): the
// cache's own footprint, without the fragmentation RSS also counts.
size_t HeapInUse() {
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  }
  return -1;
}

TEST_CASE("Memory per cached pod") {
  const int n = Env("KMT_MEMORY_PODS").empty() ? 10000 : std::stoi(Env("KMT_MEMORY_PODS"));
  RestClient c(Config(), Fast());
  const std::string ns = MakeNamespace(c, "kmt-memory");
  {
    std::vector<std::thread> writers;
    writers.reserve(4);
    for (int t = 0; t < 4; ++t) {
      writers.emplace_back([&, t] {
        for (int i = t; i < n; i += 4)
          c.Create(kPods, ns, TargetPod("m" + std::to_string(i), "memory"));
      });
    }
    for (auto& t : writers) t.join();
  }
  malloc_trim(0);
  const long before = RssKiB();
  const size_t heap_before = HeapInUse();
  Informer<TargetPodView> inf(c, PodInformer(ns, "kmt-test=memory"), ProjectPod);
  inf.AddIndex("job", [](const Json& p) {
    return std::vector<std::string>{
        p["metadata"]["labels"].value("kubevirt.io/migrationJobUID", "")};
  });
  inf.Start();
  REQUIRE(inf.WaitForSync(std::chrono::seconds(120)));
  REQUIRE(inf.Size() == static_cast<size_t>(n));
  malloc_trim(0);
  const long after = RssKiB();
  const double heap_per_pod =
      (static_cast<double>(HeapInUse()) - static_cast<double>(heap_before)) / n;
  inf.Stop();
  const double per_pod = static_cast<double>(after - before) * 1024.0 / n;
  std::cout << "memory: " << n << " pods cached (projection + job index): RSS " << before
            << " KiB -> " << after << " KiB, " << per_pod << " bytes per pod by RSS, "
            << heap_per_pod << " bytes per pod of live heap\n";

  // For comparison: caching the whole object.
  malloc_trim(0);
  const long full_before = RssKiB();
  const size_t full_heap_before = HeapInUse();
  Informer<Json> full(c, PodInformer(ns, "kmt-test=memory"),
                      [](const Json& p) { return std::make_shared<const Json>(p); });
  full.Start();
  REQUIRE(full.WaitForSync(std::chrono::seconds(120)));
  malloc_trim(0);
  const long full_after = RssKiB();
  const double full_heap =
      (static_cast<double>(HeapInUse()) - static_cast<double>(full_heap_before)) / n;
  full.Stop();
  std::cout << "memory: whole objects instead: "
            << static_cast<double>(full_after - full_before) * 1024.0 / n
            << " bytes per pod by RSS, " << full_heap << " bytes per pod of live heap\n";
  CHECK(heap_per_pod < 2048);
}

}  // namespace
}  // namespace kmt::kube
