// kube/informer_test.cc
#include "kube/informer.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <future>
#include <thread>

#include "base/fake_clock.h"
#include "base/poll.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::kube {
namespace {

// What a controller would keep of a target pod.
struct PodView {
  std::string name;
  std::string node;
  std::string job;
};

std::shared_ptr<const PodView> Project(const Json& pod) {
  const Json& m = pod.at("metadata");
  if (m.value("labels", Json::object()).value("skip", "") == "yes") return nullptr;
  auto v = std::make_shared<PodView>();
  v->name = m.at("name").get<std::string>();
  v->node = pod.value("spec", Json::object()).value("nodeName", "");
  v->job = m.value("labels", Json::object()).value("kubevirt.io/migrationJobUID", "");
  return v;
}

std::vector<std::string> JobIndex(const Json& pod) {
  const std::string job =
      pod.at("metadata").value("labels", Json::object()).value("kubevirt.io/migrationJobUID", "");
  if (job.empty()) return {};
  return {job};
}

Json Pod(const std::string& name, const std::string& job = "", const std::string& node = "") {
  Json p = {{"metadata", {{"name", name}, {"labels", Json::object()}}}, {"spec", Json::object()}};
  if (!job.empty()) p["metadata"]["labels"]["kubevirt.io/migrationJobUID"] = job;
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

struct Recorder {
  std::mutex mu;
  std::vector<std::string> log;
  void Add(std::string s) {
    std::scoped_lock lock(mu);
    log.push_back(std::move(s));
  }
  std::vector<std::string> Take() {
    std::scoped_lock lock(mu);
    return std::exchange(log, {});
  }
};

InformerOptions Options() {
  InformerOptions o;
  o.watch.resource = kPods;
  o.watch.ns = "ns";
  o.watch.page_size = 2;
  return o;
}

void Hook(Informer<PodView>& inf, Recorder& rec) {
  inf.AddHandlers({
      [&](const std::string& k, const std::shared_ptr<const PodView>& o) {
        rec.Add("add " + k + " " + o->node);
      },
      [&](const std::string& k, const std::shared_ptr<const PodView>& o,
          const std::shared_ptr<const PodView>& n) {
        rec.Add("update " + k + " " + o->node + "->" + n->node);
      },
      [&](const std::string& k, const std::shared_ptr<const PodView>& o) {
        rec.Add("delete " + k + " " + o->node);
      },
  });
}

using V = std::vector<std::string>;

TEST_CASE("Step by step: list, watch, handlers, index, projection filter") {
  FakeClient c;
  base::FakeClock clock;
  Informer<PodView> inf(c, Options(), Project, clock);
  Recorder rec;
  Hook(inf, rec);
  inf.AddIndex("job", JobIndex);
  c.Create(kPods, "ns", Pod("a", "j1", "n1"));
  c.Create(kPods, "ns", Pod("b", "j1"));
  c.Create(kPods, "ns", Pod("c", "j2"));
  Json skipped = Pod("s");
  skipped["metadata"]["labels"]["skip"] = "yes";
  c.Create(kPods, "ns", skipped);
  c.Create(kPods, "other", Pod("x"));

  inf.StepForTest();  // Init
  inf.StepForTest();  // page 1: a, b
  CHECK_FALSE(inf.HasSynced());
  CHECK(inf.Size() == 0);  // nothing is visible before the list completes
  inf.StepForTest();       // page 2: c (s is projected away) + done
  CHECK(inf.HasSynced());
  CHECK(inf.Keys() == V{"ns/a", "ns/b", "ns/c"});
  CHECK(rec.Take() == V{"add ns/a n1", "add ns/b ", "add ns/c "});
  CHECK(inf.Get("ns/a")->node == "n1");
  CHECK(inf.Get("ns/s") == nullptr);
  CHECK(inf.KeysByIndex("job", "j1") == V{"ns/a", "ns/b"});
  REQUIRE(inf.ByIndex("job", "j2").size() == 1);
  CHECK(inf.ByIndex("job", "j2")[0]->name == "c");

  inf.StepForTest();  // open watch
  c.Patch(kPods, "ns", "b", PatchType::kMergePatch,
          {{"spec", {{"nodeName", "n2"}}},
           {"metadata", {{"labels", {{"kubevirt.io/migrationJobUID", "j2"}}}}}});
  inf.StepForTest();
  CHECK(rec.Take() == V{"update ns/b ->n2"});
  CHECK(inf.KeysByIndex("job", "j1") == V{"ns/a"});
  CHECK(inf.KeysByIndex("job", "j2") == V{"ns/b", "ns/c"});

  // An object whose projection becomes nullptr leaves the cache.
  c.Patch(kPods, "ns", "c", PatchType::kMergePatch,
          {{"metadata", {{"labels", {{"skip", "yes"}}}}}});
  inf.StepForTest();
  CHECK(rec.Take() == V{"delete ns/c "});
  CHECK(inf.KeysByIndex("job", "j2") == V{"ns/b"});

  c.Delete(kPods, "ns", "a");
  inf.StepForTest();
  CHECK(rec.Take() == V{"delete ns/a n1"});
  CHECK(inf.KeysByIndex("job", "j1").empty());
  CHECK(inf.Keys() == V{"ns/b"});

  inf.Resync();
  CHECK(rec.Take() == V{"update ns/b n2->n2"});
  CHECK(clock.Sleeps().empty());
}

TEST_CASE("A relist after 410 reconciles the cache: deletions seen while away are delivered") {
  FakeClient::Options fo;
  fo.watch_history = 1;
  FakeClient c(fo);
  base::FakeClock clock;
  Informer<PodView> inf(c, Options(), Project, clock);
  Recorder rec;
  Hook(inf, rec);
  inf.AddIndex("job", JobIndex);
  c.Create(kPods, "ns", Pod("a", "j"));
  c.Create(kPods, "ns", Pod("b", "j"));
  for (int i = 0; i < 2; ++i) inf.StepForTest();  // Init, one page + done
  CHECK(inf.HasSynced());
  rec.Take();
  inf.StepForTest();  // watching
  c.CloseWatches();
  inf.StepForTest();  // ended
  c.Delete(kPods, "ns", "a");
  c.Create(kPods, "ns", Pod("c", "j"));
  c.Patch(kPods, "ns", "b", PatchType::kMergePatch, {{"spec", {{"nodeName", "n9"}}}});
  inf.StepForTest();                              // reopen from an rv that is now compacted
  inf.StepForTest();                              // ERROR 410 -> Empty
  for (int i = 0; i < 2; ++i) inf.StepForTest();  // Init, one page (b c) + done
  CHECK(rec.Take() == V{"delete ns/a ", "update ns/b ->n9", "add ns/c "});
  CHECK(inf.Keys() == V{"ns/b", "ns/c"});
  CHECK(inf.KeysByIndex("job", "j") == V{"ns/b", "ns/c"});
  CHECK(inf.HasSynced());
}

TEST_CASE(
    "The first list's adds go to on_initial_add, then on_initial_list_done; a relist's do not") {
  FakeClient::Options fo;
  fo.watch_history = 1;
  FakeClient c(fo);
  base::FakeClock clock;
  Informer<PodView> inf(c, Options(), Project, clock);
  Recorder rec;
  Hook(inf, rec);  // on_add only: it sees the first list's adds as before
  inf.AddHandlers({
      [&](const std::string& k, const std::shared_ptr<const PodView>&) { rec.Add("2:add " + k); },
      nullptr,
      nullptr,
      [&](const std::string& k, const std::shared_ptr<const PodView>&) {
        rec.Add("2:initial " + k);
      },
      [&] { rec.Add("2:initial list done"); },
  });
  c.Create(kPods, "ns", Pod("a"));
  c.Create(kPods, "ns", Pod("b"));
  c.Create(kPods, "ns", Pod("c"));
  inf.StepForTest();  // Init
  inf.StepForTest();  // page 1: a, b
  CHECK(rec.Take().empty());
  inf.StepForTest();  // page 2: c + done
  CHECK(rec.Take() == V{"add ns/a ", "2:initial ns/a", "add ns/b ", "2:initial ns/b", "add ns/c ",
                        "2:initial ns/c", "2:initial list done"});
  inf.StepForTest();  // watching
  c.Create(kPods, "ns", Pod("d"));
  inf.StepForTest();
  CHECK(rec.Take() == V{"add ns/d ", "2:add ns/d"});

  // A relist after 410: its adds are changes, delivered as the watch's; no second "done".
  c.CloseWatches();
  inf.StepForTest();  // ended
  c.Create(kPods, "ns", Pod("e"));
  c.Create(kPods, "ns", Pod("f"));
  inf.StepForTest();                              // reopen from an rv that is now compacted
  inf.StepForTest();                              // ERROR 410 -> Empty
  for (int i = 0; i < 4; ++i) inf.StepForTest();  // Init, three pages + done
  const V relisted = rec.Take();
  CHECK(std::count(relisted.begin(), relisted.end(), "2:add ns/e") == 1);
  CHECK(std::count(relisted.begin(), relisted.end(), "2:add ns/f") == 1);
  for (const std::string& line : relisted) {
    CHECK(line.rfind("2:initial", 0) == std::string::npos);
  }
}

TEST_CASE("An empty first list still reports its end") {
  FakeClient c;
  base::FakeClock clock;
  Informer<PodView> inf(c, Options(), Project, clock);
  Recorder rec;
  inf.AddHandlers({nullptr, nullptr, nullptr, nullptr, [&] { rec.Add("done"); }});
  inf.StepForTest();  // Init
  inf.StepForTest();  // the empty page + done
  CHECK(inf.HasSynced());
  CHECK(rec.Take() == V{"done"});
}

TEST_CASE("A throwing projection is reported, never fatal") {
  FakeClient c;
  std::vector<std::string> errors;
  InformerOptions o = Options();
  o.on_error = [&](const KubeError& e) { errors.emplace_back(e.what()); };
  Informer<PodView> inf(c, o, [](const Json& j) -> std::shared_ptr<const PodView> {
    if (!j["spec"].contains("nodeName")) throw std::runtime_error("no node");
    return Project(j);
  });
  c.Create(kPods, "ns", Pod("a"));
  c.Create(kPods, "ns", Pod("b", "", "n1"));
  for (int i = 0; i < 2; ++i) inf.StepForTest();
  CHECK(inf.Keys() == V{"ns/b"});
  CHECK(errors == V{"projecting pods ns/a: no node"});
}

TEST_CASE("On its own thread the cache converges after 1,000 creates, updates and deletes") {
  FakeClient c;
  InformerOptions o = Options();
  o.watch.page_size = 100;
  Informer<PodView> inf(c, o, Project);
  std::mutex mu;
  std::condition_variable cv;
  int deliveries = 0;
  inf.AddHandlers({[&](auto&&...) {
                     std::scoped_lock l(mu);
                     ++deliveries;
                     cv.notify_all();
                   },
                   [&](auto&&...) {
                     std::scoped_lock l(mu);
                     ++deliveries;
                     cv.notify_all();
                   },
                   [&](auto&&...) {
                     std::scoped_lock l(mu);
                     ++deliveries;
                     cv.notify_all();
                   }});
  for (int i = 0; i < 150; ++i) c.Create(kPods, "ns", Pod("pre-" + std::to_string(i)));
  inf.Start();
  REQUIRE(inf.WaitForSync(std::chrono::seconds(10)));
  CHECK(inf.Size() == 150);
  int writes = 0;
  for (int i = 0; i < 400; ++i, ++writes) c.Create(kPods, "ns", Pod("p" + std::to_string(i)));
  for (int i = 0; i < 400; ++i, ++writes) {
    c.Patch(kPods, "ns", "p" + std::to_string(i), PatchType::kMergePatch,
            {{"spec", {{"nodeName", "n" + std::to_string(i % 7)}}}});
  }
  for (int i = 0; i < 200; ++i, ++writes) c.Delete(kPods, "ns", "p" + std::to_string(i * 2));
  CHECK(writes == 1000);
  {
    std::unique_lock<std::mutex> l(mu);
    REQUIRE(cv.wait_for(l, std::chrono::seconds(20), [&] { return deliveries == 150 + 1000; }));
  }
  Json server = c.List(kPods, "ns");
  std::vector<std::string> want;
  for (const Json& p : server["items"]) {
    want.push_back("ns/" + p["metadata"]["name"].get<std::string>());
    CHECK(inf.Get(want.back())->node == p["spec"].value("nodeName", ""));
  }
  std::ranges::sort(want);
  CHECK(inf.Keys() == want);
  CHECK(inf.Size() == 350);
  const base::Stopwatch stopping;
  inf.Stop();
  CHECK(stopping.Elapsed() < std::chrono::seconds(2));
}

// Counts resyncs (updates whose old and new object are one), for the resync tests.
struct ResyncCounter {
  explicit ResyncCounter(Informer<PodView>& inf) {
    inf.AddHandlers({nullptr,
                     [this](const std::string&, const auto& old_obj, const auto& new_obj) {
                       std::scoped_lock l(mu);
                       if (old_obj == new_obj) ++resyncs;
                       cv.notify_all();
                     },
                     nullptr});
  }
  std::mutex mu;
  std::condition_variable cv;
  int resyncs = 0;
};

TEST_CASE("Periodic resync re-delivers updates on its own thread") {
  FakeClient c;
  InformerOptions o = Options();
  o.resync_period = std::chrono::milliseconds(1);
  Informer<PodView> inf(c, o, Project);
  ResyncCounter r(inf);
  c.Create(kPods, "ns", Pod("a"));
  inf.Start();
  std::unique_lock<std::mutex> l(r.mu);
  CHECK(r.cv.wait_for(l, std::chrono::seconds(10), [&] { return r.resyncs >= 3; }));
  l.unlock();
  inf.Stop();
  inf.Stop();  // idempotent
}

TEST_CASE("Periodic resync is a timer on the informer's clock; Stop cancels it") {
  FakeClient c;
  base::FakeClock clock;
  InformerOptions o = Options();
  o.resync_period = std::chrono::minutes(1);
  Informer<PodView> inf(c, o, Project, clock);
  ResyncCounter r(inf);
  c.Create(kPods, "ns", Pod("a"));
  inf.Start();
  REQUIRE(inf.WaitForSync(std::chrono::seconds(10)));
  // The resync thread schedules its timer as it starts, and the next one after each resync.
  auto wait_for_timer = [&] {
    base::PollUntil(base::SystemClock(), std::chrono::seconds(10), std::chrono::milliseconds(10),
                    [&] { return clock.PendingTimers() > 0; });
  };
  wait_for_timer();
  REQUIRE(clock.PendingTimers() == 1);
  CHECK(clock.NextTimerIn() == std::chrono::minutes(1));
  for (int round = 1; round <= 2; ++round) {
    CAPTURE(round);
    clock.Advance(std::chrono::minutes(1));
    std::unique_lock<std::mutex> l(r.mu);
    REQUIRE(r.cv.wait_for(l, std::chrono::seconds(10), [&] { return r.resyncs == round; }));
    l.unlock();
    wait_for_timer();
    REQUIRE(clock.PendingTimers() == 1);
  }
  inf.Stop();
  CHECK(clock.PendingTimers() == 0);
  std::scoped_lock l(r.mu);
  CHECK(r.resyncs == 2);
}

TEST_CASE("WaitForSync times out on the informer's clock, and ends when the cache syncs") {
  using namespace std::chrono_literals;
  FakeClient c;
  c.Create(kPods, "ns", Pod("a"));
  base::FakeClock clock;
  Informer<PodView> inf(c, Options(), Project, clock);
  auto timer_pending = [&] {
    return base::PollUntil(base::SystemClock(), std::chrono::seconds(10), base::Duration::zero(),
                           [&] { return clock.PendingTimers() == 1; });
  };
  auto unsynced = std::async(std::launch::async, [&] { return inf.WaitForSync(10s); });
  REQUIRE(timer_pending());
  CHECK(clock.NextTimerIn() == 10s);
  clock.Advance(10s);
  CHECK_FALSE(unsynced.get());

  auto synced = std::async(std::launch::async, [&] { return inf.WaitForSync(10s); });
  REQUIRE(timer_pending());
  for (int i = 0; i < 2; ++i) inf.StepForTest();  // Init, one page + done
  CHECK(synced.get());
  CHECK(clock.PendingTimers() == 0);  // its timeout was cancelled
  CHECK(inf.WaitForSync(10s));        // synced: at once, with no timer
  CHECK(clock.PendingTimers() == 0);
}

TEST_CASE("ObjectKey") {
  CHECK(ObjectKey({{"metadata", {{"name", "n"}, {"namespace", "ns"}}}}) == "ns/n");
  CHECK(ObjectKey({{"metadata", {{"name", "node-1"}}}}) == "node-1");
  CHECK(ObjectKey(Json::array()) == "");
  // Odd metadata reads as absent, never as an exception.
  CHECK(ObjectKey(Json::parse(R"({"metadata": {"name": 5, "namespace": "ns"}})")) == "ns/");
  CHECK(ObjectKey(Json::parse(R"({"metadata": {"name": "n", "namespace": ["ns"]}})")) == "n");
  CHECK(ObjectKey(Json::parse(R"({"metadata": {"name": "n", "namespace": null}})")) == "n");
  CHECK(ObjectKey(Json::parse(R"({"metadata": "n"})")) == "");
  CHECK(ObjectKey(Json::parse(R"("n")")) == "");
}

TEST_CASE("An informer lists and watches with its projection's reads and its own") {
  FakeClient c;
  base::FakeClock clock;
  const base::ObjectReads reads{{"spec", "nodeName"}, {"metadata", "labels"}};
  InformerOptions o = Options();
  o.watch.reads = &reads;
  std::vector<Json> seen;  // the projection runs on the informer's (here the test's) thread
  Informer<PodView> inf(
      c, o,
      [&](const Json& pod) {
        seen.push_back(pod);
        return Project(pod);
      },
      clock);
  Json a = Pod("a", "j1", "n1");
  a["metadata"]["annotations"] = {{"big", "x"}};
  a["metadata"]["managedFields"] = Json::array({{{"manager", "m"}}});
  a["spec"]["containers"] = Json::array({{{"name", "c"}, {"env", Json::array()}}});
  a["status"] = {{"phase", "Pending"}};
  c.Create(kPods, "ns", a);
  inf.StepForTest();  // Init
  inf.StepForTest();  // the list
  REQUIRE(inf.HasSynced());
  inf.StepForTest();  // open watch
  c.Patch(kPods, "ns", "a", PatchType::kMergePatch, {{"spec", {{"nodeName", "n2"}}}});
  inf.StepForTest();
  CHECK(inf.Get("ns/a")->node == "n2");
  REQUIRE(seen.size() == 2);
  for (size_t i = 0; i < seen.size(); ++i) {
    const Json& s = seen[i];
    CAPTURE(s.dump());
    CHECK(s["metadata"]["name"] == "a");
    CHECK(s["metadata"]["namespace"] == "ns");
    CHECK(s["metadata"]["resourceVersion"].is_string());
    CHECK(s["metadata"]["labels"] == Json{{"kubevirt.io/migrationJobUID", "j1"}});
    CHECK(s["metadata"].size() == 4);
    CHECK(s["spec"] == Json{{"nodeName", i == 0 ? "n1" : "n2"}});
    CHECK_FALSE(s.contains("status"));
  }
  // The lists and watches asked for the union (what the fake trims with is what the API
  // server's answers are parsed with: kube/managed_fields.h).
  CHECK(InformerReads(reads).paths().size() == reads.paths().size() + 3);
}

}  // namespace
}  // namespace kmt::kube
