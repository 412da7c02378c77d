#include "api/labels.h"

#include <malloc.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <deque>
#include <thread>

#include "api/projections.h"

namespace kmt::api {
namespace {

TEST_CASE("Intern hands out one stable copy per text while it is held") {
  const InternedString a = Intern("cpu-feature.node.kubevirt.io/avx2");
  CHECK(*a == "cpu-feature.node.kubevirt.io/avx2");
  CHECK(Intern(std::string("cpu-feature.node.kubevirt.io/") + "avx2") == a);
  CHECK(FindInterned("cpu-feature.node.kubevirt.io/avx2") == a.get());
  CHECK(FindInterned("never-interned-anywhere-9f2c") == nullptr);
  std::vector<InternedString> filler;
  filler.reserve(10000);
  for (int i = 0; i < 10000; ++i) filler.push_back(Intern("filler-" + std::to_string(i)));
  CHECK(Intern("cpu-feature.node.kubevirt.io/avx2").get() == a.get());  // rehashed, same copy
  const InternedString& copy = a;
  CHECK(copy == a);
  CHECK(InternedString().get() == nullptr);
  CHECK(InternedString().str().empty());
}

TEST_CASE("Intern ids name the same texts") {
  const InternedString zone = Intern("topology.kubernetes.io/zone");
  const InternId id = zone.id();
  CHECK(id != kNoIntern);
  CHECK(FindInternId("topology.kubernetes.io/zone") == id);
  CHECK(InternText(id) == "topology.kubernetes.io/zone");
  CHECK(&InternText(id) == zone.get());
  CHECK(FindInternId("never-interned-anywhere-77aa") == kNoIntern);
  CHECK(InternText(kNoIntern).empty());
}

TEST_CASE("A text nobody holds leaves the pool") {
  {
    const InternedString once = Intern("held-only-here-5e1f");
    CHECK(FindInterned("held-only-here-5e1f") != nullptr);
    const Labels l{{"held-only-here-key-5e1f", "held-only-here-value-5e1f"}};
    CHECK(FindInternId("held-only-here-value-5e1f") != kNoIntern);
  }
  CHECK(FindInterned("held-only-here-5e1f") == nullptr);
  CHECK(FindInternId("held-only-here-key-5e1f") == kNoIntern);
  CHECK(FindInternId("held-only-here-value-5e1f") == kNoIntern);
}

TEST_CASE("Labels find by text and by interned key") {
  const Labels l{{"kubernetes.io/hostname", "node-1"}, {"zone", "a"}, {"gpu", ""}};
  CHECK(l.size() == 3);
  REQUIRE(l.Find("zone") != nullptr);
  CHECK(*l.Find("zone") == "a");
  CHECK(*l.Find("gpu") == "");
  CHECK(l.Find("rack") == nullptr);
  CHECK(l.Find("never-interned-anywhere-1b7d") == nullptr);
  CHECK(InternText(l.FindId(FindInternId("kubernetes.io/hostname"))) == "node-1");
  CHECK(l.FindId(kNoIntern) == kNoIntern);
  const InternedString rack = Intern("rack");
  CHECK(l.FindId(rack.id()) == kNoIntern);
  CHECK(l.Sorted() == std::vector<std::pair<std::string, std::string>>{
                          {"gpu", ""}, {"kubernetes.io/hostname", "node-1"}, {"zone", "a"}});
}

TEST_CASE("Labels from JSON keep string values only") {
  const Labels l =
      Labels::FromJson(nlohmann::json::parse(R"({"a": "1", "b": 2, "c": null, "d": "x"})"));
  CHECK(l.Sorted() == std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"d", "x"}});
  CHECK(l.ToJson() == nlohmann::json::parse(R"({"a": "1", "d": "x"})"));
  CHECK(Labels::FromJson(nlohmann::json::array()).empty());
  CHECK(Labels::FromJson(nullptr).empty());
  CHECK(Labels::FromJson(nlohmann::json::object()).empty());
  CHECK(Labels::FromJson(nlohmann::json::parse(R"({"a": "1"})")) == Labels{{"a", "1"}});
}

TEST_CASE("Duplicate keys keep the first value") {
  const Labels l{{"a", "1"}, {"a", "2"}};
  CHECK(l.size() == 1);
  CHECK(*l.Find("a") == "1");
}

TEST_CASE("Equal label sets share one block; copies and moves keep it") {
  const size_t sets = InternPoolStats().label_sets;
  Labels a{{"app", "web"}, {"tier", "front"}};
  Labels b = Labels::FromJson(nlohmann::json::parse(R"({"tier": "front", "app": "web"})"));
  CHECK(a == b);
  CHECK(InternPoolStats().label_sets == sets + 1);
  Labels c{{"app", "db"}};
  CHECK_FALSE(a == c);
  CHECK(InternPoolStats().label_sets == sets + 2);
  Labels moved = std::move(c);
  CHECK(moved.size() == 1);
  CHECK(c.empty());  // NOLINT: moved-from is empty
  c = a;
  CHECK(c == a);
  moved = Labels();
  CHECK(InternPoolStats().label_sets == sets + 1);
  a = b;  // self-equal assignment keeps the set
  CHECK(*a.Find("app") == "web");
}

TEST_CASE("IsNodeLabellerKey: node-labeller's domains, not the host's TSC frequency") {
  auto [key, want] = GENERATE(table<std::string, bool>({
      {"cpu-feature.node.kubevirt.io/invtsc", true},
      {"cpu-model.node.kubevirt.io/Skylake-Client-IBRS", true},
      {"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS", true},
      {"host-model-cpu.node.kubevirt.io/Skylake-Client-IBRS", true},
      {"hyperv.node.kubevirt.io/frequencies", true},
      {"node.kubevirt.io/any", true},
      {"node-labeller.kubevirt.io/obsolete-host-model", true},
      {"cpu-timer.node.kubevirt.io/tsc-frequency", false},
      {"scheduling.node.kubevirt.io/tsc-frequency-2400000000", false},
      {"kubevirt.io/schedulable", false},
      {"kubernetes.io/hostname", false},
      {"evil.node.kubevirt.io.example.com/x", false},
      {"xnode.kubevirt.io/x", false},
      {"cpu-feature.node.kubevirt.io", false},
      {"", false},
  }));
  CAPTURE(key);
  CHECK(IsNodeLabellerKey(key) == want);
}

// A node of CPU model `model` as node-labeller labels it, with its own hostname.
nlohmann::json LabelledNode(const std::string& host, const std::string& model) {
  nlohmann::json labels = {{"kubernetes.io/hostname", host},
                           {"topology.kubernetes.io/zone", "zone-a"},
                           {"cpu-timer.node.kubevirt.io/tsc-frequency", "2400000000"},
                           {"cpu-model.node.kubevirt.io/" + model, "true"}};
  for (int f = 0; f < 40; ++f) {
    labels["cpu-feature.node.kubevirt.io/feature-" + std::to_string(f)] = "true";
  }
  return labels;
}

TEST_CASE("Nodes of one CPU model share their node-labeller labels") {
  const size_t sets = InternPoolStats().label_sets;
  const nlohmann::json j1 = LabelledNode("node-1", "Skylake");
  const nlohmann::json j2 = LabelledNode("node-2", "Skylake");
  const nlohmann::json j3 = LabelledNode("node-3", "Icelake");
  {
    const Labels n1 = Labels::FromJson(j1);
    const Labels n2 = Labels::FromJson(j2);
    const Labels n3 = Labels::FromJson(j3);
    // One shared set per CPU model, one own set per node.
    CHECK(InternPoolStats().label_sets == sets + 5);
    CHECK_FALSE(n1 == n2);
    CHECK(Labels::FromJson(j2) == n2);  // equal sets are still one block
    CHECK(InternPoolStats().label_sets == sets + 5);
    for (const auto* pair : {&j1, &j2, &j3}) {
      const Labels l = Labels::FromJson(*pair);
      CHECK(l.size() == pair->size());
      CHECK(l.ToJson() == *pair);
      std::vector<std::pair<std::string, std::string>> want;
      for (const auto& [k, v] : pair->items()) want.emplace_back(k, v.get<std::string>());
      CHECK(l.Sorted() == want);  // nlohmann's objects iterate sorted by key
      for (const auto& [k, v] : pair->items()) {
        CAPTURE(k);
        REQUIRE(l.Find(k) != nullptr);
        CHECK(*l.Find(k) == v.get<std::string>());
        CHECK(l.FindId(FindInternId(k)) == FindInternId(v.get<std::string>()));
      }
    }
    CHECK(n1.Find("cpu-model.node.kubevirt.io/Icelake") == nullptr);
    CHECK(n3.Find("cpu-model.node.kubevirt.io/Skylake") == nullptr);
    CHECK(n1.Find("kubernetes.io/os") == nullptr);
    CHECK(n1.FindId(FindInternId("kubernetes.io/hostname")) == FindInternId("node-1"));
  }
  // The last node of each model took its shared set along.
  CHECK(InternPoolStats().label_sets == sets);
}

TEST_CASE("A node's labels cost its own labels, not node-labeller's") {
  std::vector<Labels> nodes;
  nodes.reserve(1000);
  nodes.push_back(Labels::FromJson(LabelledNode("node-0", "Skylake")));  // the shared set
  malloc_trim(0);
  const size_t before = mallinfo2().uordblks;
  for (int i = 1; i <= 1000; ++i) {
    nodes.push_back(Labels::FromJson(LabelledNode("node-" + std::to_string(i), "Skylake")));
  }
  malloc_trim(0);
  const size_t per_node = (mallinfo2().uordblks - before) / 1000;
  CAPTURE(per_node);
  // 44 labels at 8 bytes each would be 352 bytes; three own labels, the hostname's text and
  // its pool entry stay well under.
  CHECK(per_node < 250);
}

// Per-object values churning through a long-running operator's caches: each round's
// objects carry values no earlier round had (pod uids, pod-template-hash, node names, the
// cluster autoscaler's timestamp taints), and a bounded window of them is alive at once.
void Churn(int round, int objects, int window) {
  std::deque<std::pair<BoundPod, NodeInfo>> alive;
  for (int i = 0; i < objects; ++i) {
    const std::string n = std::to_string(round) + "-" + std::to_string(i);
    BoundPod pod = BoundPod::FromJson(
        nlohmann::json{{"metadata",
                        {{"namespace", "vms"},
                         {"labels",
                          {{"kubevirt.io", "virt-launcher"},
                           {"kubevirt.io/created-by", "7ac26e32-a799-4eec-9a2a-" + n},
                           {"pod-template-hash", "h" + n}}}}},
                       {"spec", {{"nodeName", "node-" + n}}}});
    NodeInfo node = NodeInfo::FromJson(nlohmann::json{
        {"metadata",
         {{"name", "node-" + n}, {"labels", {{"kubernetes.io/hostname", "node-" + n}}}}},
        {"spec",
         {{"taints",
           {{{"key", "ToBeDeletedByClusterAutoscaler"},
             {"value", "17672256" + n},
             {"effect", "NoSchedule"}}}}}}});
    alive.emplace_back(std::move(pod), std::move(node));
    if (alive.size() > static_cast<size_t>(window)) alive.pop_front();
  }
}

TEST_CASE("Texts stay findable while others around them go, in any order") {
  // Enough texts to grow the pool's id table several times and to make long probe runs; every
  // third and then every other one goes, each erase shifting its run back.
  std::vector<InternedString> held;
  held.reserve(5000);
  for (int i = 0; i < 5000; ++i) held.push_back(Intern("probe-run-" + std::to_string(i)));
  const auto check = [&] {
    for (int i = 0; i < 5000; ++i) {
      CAPTURE(i);
      const std::string text = "probe-run-" + std::to_string(i);
      if (held[i]) {
        REQUIRE(FindInterned(text) == held[i].get());
        REQUIRE(FindInternId(text) == held[i].id());
        REQUIRE(Intern(text) == held[i]);
      } else {
        REQUIRE(FindInterned(text) == nullptr);
      }
    }
  };
  for (int i = 0; i < 5000; i += 3) held[i] = InternedString();
  check();
  for (int i = 4999; i >= 0; i -= 2) held[i] = InternedString();
  check();
  for (int i = 0; i < 5000; i += 3) held[i] = Intern("probe-run-" + std::to_string(i));
  check();
  held.clear();
  CHECK(FindInterned("probe-run-0") == nullptr);
  CHECK(FindInterned("probe-run-4998") == nullptr);
}

TEST_CASE("Churn of distinct per-object values leaves the intern pool bounded") {
  const InternStats before = InternPoolStats();
  for (int round = 0; round < 20; ++round) {
    Churn(round, 1000, 50);
    const InternStats now = InternPoolStats();
    CAPTURE(round, now.texts, now.slots, now.label_sets);
    // Everything the churn made went with its objects ...
    CHECK(now.texts == before.texts);
    CHECK(now.label_sets == before.label_sets);
    // ... and the slots it needed are the window's, reused round after round (20,000
    // objects with 5 distinct texts each went through).
    CHECK(now.slots <= before.slots + 50 * 6 + 16);
  }
}

TEST_CASE("Churn of distinct per-object values does not grow the heap") {
  Churn(100, 2000, 50);  // warm up: the pool's and the allocator's structures at their peak
  malloc_trim(0);
  const size_t before = mallinfo2().uordblks;
  for (int round = 101; round < 106; ++round) Churn(round, 2000, 50);
  malloc_trim(0);
  const size_t after = mallinfo2().uordblks;
  CAPTURE(before, after);
  // 10,000 objects with 5 new texts each: an append-only pool keeps > 1 MiB of them.
  CHECK(after <= before + 64 * 1024);
}

TEST_CASE("Labels and handles are shared across threads") {
  const Labels shared{{"app", "web"}, {"zone", "a"}};
  std::atomic<int> wrong{0};  // Catch's assertions are not thread-safe
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&shared, &wrong, t] {
      for (int i = 0; i < 2000; ++i) {
        const Labels& copy = shared;
        Labels mine{{"app", "web"}, {"zone", "a"}};
        Labels own{{"thread", std::to_string(t)}, {"i", std::to_string(i % 7)}};
        if (!(copy == mine && own.size() == 2 && *own.Find("thread") == std::to_string(t))) {
          ++wrong;
        }
        InternedString s = Intern("shared-text");
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
  CHECK(*shared.Find("zone") == "a");
  CHECK(FindInterned("shared-text") == nullptr);
}

}  // namespace
}  // namespace kmt::api
