// kube/watcher_test.cc — the watcher state machine, step by step.
#include "kube/watcher.h"

#include <catch2/catch.hpp>
#include <deque>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/fake_clock.h"
#include "kube/fake_client.h"
#include "kube/line_framer.h"
#include "kube/resources.h"

namespace kmt::kube {
namespace {

using State = Watcher::State;
using T = WatcherEventType;

Json Pod(const std::string& name) {
  return {{"metadata", {{"name", name}}}, {"spec", Json::object()}};
}

struct Harness {
  explicit Harness(FakeClient::Options o = {}) : client(o) {}
  FakeClient client;
  base::FakeClock clock;
  // The backoffs the watcher waited, in order.
  std::vector<std::chrono::milliseconds> sleeps() const {
    std::vector<std::chrono::milliseconds> out;
    for (base::Duration d : clock.Sleeps()) {
      out.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(d));
    }
    return out;
  }
  WatcherConfig Config() {
    WatcherConfig c;
    c.resource = kPods;
    c.ns = "ns";
    c.page_size = 2;
    return c;
  }
  Watcher Make() { return {client, Config(), clock}; }
};

std::vector<std::string> Summary(const WatcherStep& step) {
  std::vector<std::string> out;
  for (const WatcherEvent& e : step.events) {
    switch (e.type) {
      case T::kInit:
        out.emplace_back("Init");
        break;
      case T::kInitApply:
        out.push_back("InitApply " + e.object["metadata"]["name"].get<std::string>());
        break;
      case T::kInitDone:
        out.emplace_back("InitDone");
        break;
      case T::kApply:
        out.push_back("Apply " + e.object["metadata"]["name"].get<std::string>());
        break;
      case T::kDelete:
        out.push_back("Delete " + e.object["metadata"]["name"].get<std::string>());
        break;
    }
  }
  return out;
}

using V = std::vector<std::string>;

// Steps through the initial paged list of p1..p3 and opens the watch.
void ListThree(Harness& h, Watcher& w) {
  for (const char* n : {"p1", "p2", "p3"}) h.client.Create(kPods, "ns", Pod(n));
  CHECK(Summary(w.Step()) == V{"Init"});
  CHECK(w.state() == State::kInitListing);
  CHECK(Summary(w.Step()) == V{"InitApply p1", "InitApply p2"});
  CHECK(w.state() == State::kInitListing);
  CHECK(Summary(w.Step()) == V{"InitApply p3", "InitDone"});
  CHECK(w.state() == State::kInitListed);
  CHECK(w.resource_version() == "3");
  CHECK(w.Step().events.empty());
  CHECK(w.state() == State::kWatching);
}

TEST_CASE("Paged list, then watch; bookmarks advance the resourceVersion") {
  Harness h;
  Watcher w = h.Make();
  ListThree(h, w);
  h.client.Create(kPods, "ns", Pod("p4"));
  CHECK(Summary(w.Step()) == V{"Apply p4"});
  CHECK(w.resource_version() == "4");
  h.client.Delete(kPods, "ns", "p1");
  CHECK(Summary(w.Step()) == V{"Delete p1"});
  CHECK(w.resource_version() == "5");
  h.client.Create(kNodes, "", {{"metadata", {{"name", "n"}}}});  // rv 6, another resource
  h.client.SendBookmarks();
  CHECK(w.Step().events.empty());
  CHECK(w.resource_version() == "6");
  CHECK(h.sleeps().empty());
}

TEST_CASE("Lists and watches leave managedFields out unless told to keep them") {
  for (const bool omit : {true, false}) {
    Harness h;
    WatcherConfig c = h.Config();
    c.omit_managed_fields = omit;
    Watcher w(h.client, c, h.clock);
    Json p = Pod("p1");
    p["metadata"]["managedFields"] = Json::array({{{"manager", "m"}}});
    h.client.Create(kPods, "ns", p);
    w.Step();  // Init
    WatcherStep listed = w.Step();
    REQUIRE(listed.events.size() == 2);
    CHECK(listed.events[0].object["metadata"].contains("managedFields") == !omit);
    w.Step();  // open the watch
    p["metadata"]["name"] = "p2";
    h.client.Create(kPods, "ns", p);
    WatcherStep watched = w.Step();
    REQUIRE(watched.events.size() == 1);
    CHECK(watched.events[0].object["metadata"].contains("managedFields") == !omit);
  }
}

TEST_CASE("After a disconnect it re-watches from the last resourceVersion, without relisting") {
  Harness h;
  Watcher w = h.Make();
  ListThree(h, w);
  h.client.Create(kPods, "ns", Pod("p4"));
  CHECK(Summary(w.Step()) == V{"Apply p4"});
  h.client.CloseWatches();  // e.g. the API server restarted
  h.client.Create(kPods, "ns", Pod("p5"));
  WatcherStep ended = w.Step();
  CHECK(ended.events.empty());
  CHECK_FALSE(ended.error.has_value());
  CHECK(w.state() == State::kInitListed);
  CHECK(w.Step().events.empty());  // re-opened from rv 4
  CHECK(w.state() == State::kWatching);
  CHECK(Summary(w.Step()) == V{"Apply p5"});
  CHECK(h.sleeps().empty());  // the stream had delivered events: no backoff
  h.client.ClearCalls();
  // No list happened: only the watch.
  for (const FakeCall& c : h.client.Calls()) CHECK(c.verb != Verb::kList);
}

TEST_CASE("A 410 ERROR event makes it relist at once") {
  FakeClient::Options o;
  o.watch_history = 2;
  Harness h(o);
  Watcher w = h.Make();
  ListThree(h, w);
  h.client.CloseWatches();
  CHECK(w.Step().events.empty());
  for (int i = 0; i < 4; ++i) h.client.Create(kPods, "ns", Pod("q" + std::to_string(i)));
  CHECK(w.Step().events.empty());  // opens the watch from rv 3, now compacted
  WatcherStep gone = w.Step();
  REQUIRE(gone.error.has_value());
  CHECK(gone.error->kind() == ErrorKind::kGone);
  CHECK(std::string(gone.error->what()) ==
        "watch pods -n ns: HTTP 410 Gone: too old resource version: 3 (6)");
  CHECK(w.state() == State::kEmpty);
  CHECK(Summary(w.Step()) == V{"Init"});
  CHECK(Summary(w.Step()) == V{"InitApply p1", "InitApply p2"});
  CHECK(Summary(w.Step()) == V{"InitApply p3", "InitApply q0"});
  CHECK(Summary(w.Step()) == V{"InitApply q1", "InitApply q2"});
  CHECK(Summary(w.Step()) == V{"InitApply q3", "InitDone"});
  CHECK(w.resource_version() == "7");
  CHECK(h.sleeps().size() == 1);  // only for the stream that closed without events
}

TEST_CASE("HTTP 410 on opening the watch also relists") {
  Harness h;
  Watcher w = h.Make();
  ListThree(h, w);
  h.client.CloseWatches();
  w.Step();
  h.client.FailNext(Verb::kWatch, 1, ErrorKind::kGone);
  WatcherStep s = w.Step();
  REQUIRE(s.error.has_value());
  CHECK(s.error->kind() == ErrorKind::kGone);
  CHECK(w.state() == State::kEmpty);
  CHECK(Summary(w.Step()) == V{"Init"});
}

TEST_CASE("Repeated failures back off exponentially; success resets") {
  Harness h;
  Watcher w = h.Make();
  h.client.Create(kPods, "ns", Pod("p1"));
  h.client.FailNext(Verb::kList, 6, ErrorKind::kUnavailable);
  CHECK(Summary(w.Step()) == V{"Init"});
  for (int i = 0; i < 6; ++i) {
    WatcherStep s = w.Step();
    REQUIRE(s.error.has_value());
    CHECK(s.error->kind() == ErrorKind::kUnavailable);
    CHECK(w.state() == State::kInitListing);
  }
  CHECK(Summary(w.Step()) == V{"InitApply p1", "InitDone"});
  using ms = std::chrono::milliseconds;
  CHECK(h.sleeps() == std::vector<ms>{ms(800), ms(1600), ms(3200), ms(6400), ms(12800), ms(25600)});
  CHECK(w.consecutive_failures() == 0);
  CHECK(w.NextBackoff() == ms(800));
  h.client.FailNext(Verb::kWatch, 3, ErrorKind::kUnavailable);
  for (int i = 0; i < 3; ++i) w.Step();
  CHECK(h.sleeps().back() == ms(1600));
}

TEST_CASE("Backoff is capped") {
  Harness h;
  WatcherConfig cfg = h.Config();
  cfg.max_backoff = std::chrono::milliseconds(2000);
  Watcher w(h.client, cfg, h.clock);
  h.client.FailNext(Verb::kList, 5, ErrorKind::kTimeout);
  for (int i = 0; i < 7; ++i) w.Step();
  using ms = std::chrono::milliseconds;
  CHECK(h.sleeps() == std::vector<ms>{ms(800), ms(1600), ms(2000), ms(2000), ms(2000)});
  CHECK(w.state() == State::kInitListed);
}

TEST_CASE("A broken stream is retried from the last resourceVersion after a backoff") {
  Harness h;
  Watcher w = h.Make();
  ListThree(h, w);
  h.client.BreakWatches();
  WatcherStep broken = w.Step();
  REQUIRE(broken.error.has_value());
  CHECK(broken.error->kind() == ErrorKind::kTransport);
  CHECK(w.state() == State::kInitListed);
  h.client.Create(kPods, "ns", Pod("p4"));
  CHECK(w.Step().events.empty());
  CHECK(h.sleeps().size() == 1);
  CHECK(Summary(w.Step()) == V{"Apply p4"});
}

TEST_CASE("A stream that ends without events costs a backoff (no hot loop)") {
  Harness h;
  Watcher w = h.Make();
  ListThree(h, w);
  h.client.CloseWatches();
  w.Step();  // ended, no events on this stream
  w.Step();  // re-open after a backoff
  CHECK(h.sleeps().size() == 1);
}

// A client whose watch replays scripted events (decoded from recorded lines).
class ScriptedClient : public FakeClient {
 public:
  struct Script : WatchStream {
    std::deque<std::function<std::optional<WatchEvent>()>> steps;
    std::optional<WatchEvent> Next() override {
      if (steps.empty()) return std::nullopt;
      auto f = std::move(steps.front());
      steps.pop_front();
      return f();
    }
    void Cancel() override {}
  };
  std::deque<std::unique_ptr<Script>> scripts;
  std::unique_ptr<WatchStream> Watch(const Resource& r, std::string_view ns,
                                     const WatchOptions& o) override {
    last_watch_rv = o.resource_version;
    if (scripts.empty()) return FakeClient::Watch(r, ns, o);
    auto s = std::move(scripts.front());
    scripts.pop_front();
    return s;
  }
  std::string last_watch_rv;
};

std::unique_ptr<ScriptedClient::Script> ScriptFromLines(const std::vector<std::string>& lines) {
  auto s = std::make_unique<ScriptedClient::Script>();
  for (const std::string& l : lines) {
    s->steps.emplace_back(
        [l] { return std::optional<WatchEvent>(ParseWatchEvent(l, "watch pods")); });
  }
  return s;
}

TEST_CASE("A recorded stream drives the watcher, ending in a relist on its 410") {
  ScriptedClient c;
  base::FakeClock clock;
  WatcherConfig cfg;
  cfg.resource = kPods;
  cfg.ns = "vm-ns";
  Watcher w(c, cfg, clock);
  std::ifstream in("kube/testdata/watch_pods.jsonl", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  LineFramer f;
  std::vector<std::string> lines;
  f.Feed(ss.str(), lines);
  c.scripts.push_back(ScriptFromLines(lines));

  CHECK(Summary(w.Step()) == V{"Init"});
  CHECK(Summary(w.Step()) == V{"InitDone"});
  CHECK(w.Step().events.empty());
  CHECK(Summary(w.Step()) == V{"Apply virt-launcher-a-x7k2p"});
  CHECK(Summary(w.Step()) == V{"Apply virt-launcher-b-9qzvd"});
  CHECK(Summary(w.Step()) == V{"Apply virt-launcher-a-x7k2p"});
  CHECK(w.Step().events.empty());  // BOOKMARK
  CHECK(w.resource_version() == "150");
  CHECK(Summary(w.Step()) == V{"Delete virt-launcher-b-9qzvd"});
  WatcherStep gone = w.Step();
  REQUIRE(gone.error.has_value());
  CHECK(gone.error->kind() == ErrorKind::kGone);
  CHECK(w.state() == State::kEmpty);
}

TEST_CASE("Unknown event types and malformed events never crash: re-watch from the last rv") {
  ScriptedClient c;
  base::FakeClock clock;
  WatcherConfig cfg;
  cfg.resource = kPods;
  Watcher w(c, cfg, clock);
  c.scripts.push_back(ScriptFromLines({
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"7"}}})",
      R"({"type":"SURPRISE","object":{"metadata":{"resourceVersion":"8"}}})",
  }));
  c.scripts.push_back(ScriptFromLines({
      R"({"type":"MODIFIED","object":{"metadata":{"name":"a"}}})",
  }));
  auto malformed = std::make_unique<ScriptedClient::Script>();
  malformed->steps.emplace_back([]() -> std::optional<WatchEvent> {
    return ParseWatchEvent(R"({"type":"ADDED","obj)", "watch pods");
  });
  c.scripts.push_back(std::move(malformed));
  auto error_500 = std::make_unique<ScriptedClient::Script>();
  error_500->steps.emplace_back([] {
    return std::optional<WatchEvent>(
        WatchEvent{"ERROR", {{"kind", "Status"}, {"code", 500}, {"message", "etcd unhappy"}}});
  });
  c.scripts.push_back(std::move(error_500));

  w.Step();
  w.Step();
  w.Step();  // watch opened
  CHECK(Summary(w.Step()) == V{"Apply a"});
  WatcherStep unknown = w.Step();
  REQUIRE(unknown.error.has_value());
  CHECK(std::string(unknown.error->what()) == "watch pods: unknown watch event type \"SURPRISE\"");
  CHECK(w.state() == State::kInitListed);
  CHECK(w.resource_version() == "7");

  w.Step();  // re-open
  CHECK(c.last_watch_rv == "7");
  WatcherStep no_rv = w.Step();
  REQUIRE(no_rv.error.has_value());
  CHECK(std::string(no_rv.error->what()) ==
        "watch pods: MODIFIED event without metadata.resourceVersion");

  w.Step();
  WatcherStep bad = w.Step();
  REQUIRE(bad.error.has_value());
  CHECK(bad.error->kind() == ErrorKind::kInternal);
  CHECK(std::string(bad.error->what()) ==
        "watch pods: malformed watch event (not JSON): {\"type\":\"ADDED\",\"obj");
  CHECK(w.state() == State::kInitListed);

  w.Step();
  WatcherStep e500 = w.Step();
  REQUIRE(e500.error.has_value());
  CHECK(e500.error->kind() == ErrorKind::kUnavailable);
  CHECK(std::string(e500.error->what()) == "watch pods: HTTP 500 Unavailable: etcd unhappy");
  CHECK(w.state() == State::kInitListed);
  CHECK(clock.Sleeps().size() == 3);
}

TEST_CASE("A 410 that breaks the open stream (HTTP 410 on the watch request) relists") {
  // RestClient opens the connection on its own thread: an HTTP 410 answer reaches the
  // watcher from Next(), not from Watch().
  ScriptedClient c;
  base::FakeClock clock;
  WatcherConfig cfg;
  cfg.resource = kPods;
  Watcher w(c, cfg, clock);
  auto gone = std::make_unique<ScriptedClient::Script>();
  gone->steps.emplace_back([]() -> std::optional<WatchEvent> {
    throw ErrorFromResponse(410,
                            R"({"kind":"Status","code":410,"reason":"Expired",)"
                            R"J("message":"too old resource version: 3 (9)"})J",
                            std::nullopt, "watch pods");
  });
  c.scripts.push_back(std::move(gone));
  w.Step();
  w.Step();
  w.Step();  // watch opened
  WatcherStep s = w.Step();
  REQUIRE(s.error.has_value());
  CHECK(s.error->kind() == ErrorKind::kGone);
  CHECK(w.state() == State::kEmpty);
  CHECK(Summary(w.Step()) == V{"Init"});
}

TEST_CASE("A 429 or 5xx's Retry-After stretches the backoff, capped at max_backoff") {
  Harness h;
  WatcherConfig cfg = h.Config();
  cfg.max_backoff = std::chrono::seconds(30);
  Watcher w(h.client, cfg, h.clock);
  auto busy = [](int code, int secs) {
    return ErrorFromResponse(code, "", std::chrono::seconds(secs), "list pods -n ns");
  };
  h.client.FailNextWith(Verb::kList, 1, busy(429, 5));
  CHECK(Summary(w.Step()) == V{"Init"});
  REQUIRE(w.Step().error.has_value());
  h.client.FailNextWith(Verb::kList, 1, busy(503, 3600));
  REQUIRE(w.Step().error.has_value());  // waited 5 s, not the 800 ms backoff
  h.client.FailNextWith(Verb::kList, 1, busy(503, 1));
  REQUIRE(w.Step().error.has_value());          // waited 30 s: capped
  REQUIRE(Summary(w.Step()) == V{"InitDone"});  // 3.2 s: the backoff is longer than 1 s
  using ms = std::chrono::milliseconds;
  CHECK(h.sleeps() == std::vector<ms>{ms(5000), ms(30000), ms(3200)});
}

// A client whose LIST answers are given, page by page.
class PagedClient : public FakeClient {
 public:
  std::deque<Json> pages;
  Json List(const Resource& r, std::string_view ns, const ListOptions& o) override {
    if (pages.empty()) return FakeClient::List(r, ns, o);
    Json p = std::move(pages.front());
    pages.pop_front();
    return p;
  }
};

TEST_CASE("A list answer with a non-string continue or resourceVersion is an error, not a throw") {
  const Json bad_metadata =
      GENERATE(Json::parse(R"({"continue":5})"), Json::parse(R"({"resourceVersion":5})"),
               Json::parse(R"({"continue":null,"resourceVersion":["1"]})"),
               Json::parse(R"("not an object")"));
  CAPTURE(bad_metadata.dump());
  PagedClient c;
  c.pages.push_back({{"items", Json::array({Pod("p1")})}, {"metadata", bad_metadata}});
  WatcherConfig cfg;
  cfg.resource = kPods;
  base::FakeClock clock;
  Watcher w(c, cfg, clock);
  CHECK(Summary(w.Step()) == V{"Init"});
  WatcherStep step = w.Step();
  CHECK(step.events.empty());
  REQUIRE(step.error.has_value());
  CHECK(step.error->kind() == ErrorKind::kInternal);
  CHECK(std::string(step.error->what()) ==
        "list pods: list answer has a malformed metadata (continue and resourceVersion must be "
        "strings)");
  CHECK(w.state() == State::kEmpty);
  // The next list is well formed: the watcher recovers.
  CHECK(Summary(w.Step()) == V{"Init"});
  CHECK(Summary(w.Step()) == V{"InitDone"});
}

TEST_CASE("Cancel unblocks a Step waiting for events") {
  Harness h;
  Watcher w = h.Make();
  ListThree(h, w);
  std::thread t([&] { w.Cancel(); });
  CHECK(w.Step().events.empty());  // blocked in Next() until Cancel
  t.join();
  CHECK(w.cancelled());
  h.client.Create(kPods, "ns", Pod("late"));
  CHECK(w.Step().events.empty());
}

// Records the options of every watch it opens.
class WatchOptionsRecorder : public FakeClient {
 public:
  std::vector<WatchOptions> watches;
  std::unique_ptr<WatchStream> Watch(const Resource& r, std::string_view ns,
                                     const WatchOptions& opts) override {
    watches.push_back(opts);
    return FakeClient::Watch(r, ns, opts);
  }
};

// A watch stream can go silent without closing (a frozen proxy or a half-open TCP
// connection). The transport gives up on a stream that stays silent for the watch's
// timeoutSeconds + 30 s (kube/rest_client.cc), and the server ends every healthy watch
// at timeoutSeconds, so the timeout asked for bounds how long a silent stream goes
// unnoticed: within 45 s (client-go's HTTP/2 health check: 30 s idle + 15 s ping).
TEST_CASE(
    "Every watch asks the server to end it soon, so a silent stream is abandoned within 45 s") {
  WatchOptionsRecorder client;
  WatcherConfig config;
  config.resource = kPods;
  config.ns = "ns";
  base::FakeClock clock;
  Watcher w(client, config, clock);
  for (int i = 0; i < 5 && w.state() != State::kWatching; ++i) w.Step();  // list, open the watch
  REQUIRE(w.state() == State::kWatching);
  REQUIRE(client.watches.size() == 1);
  CAPTURE(client.watches[0].timeout.count());
  CHECK(client.watches[0].timeout > std::chrono::seconds(0));
  CHECK(client.watches[0].timeout + std::chrono::seconds(30) <= std::chrono::seconds(45));
  CHECK(client.watches[0].allow_bookmarks);  // the server's closing bookmark keeps the rv fresh
}

TEST_CASE("State names") {
  CHECK(std::string(WatcherStateName(State::kEmpty)) == "Empty");
  CHECK(std::string(WatcherStateName(State::kInitListing)) == "InitListing");
  CHECK(std::string(WatcherStateName(State::kInitListed)) == "InitListed");
  CHECK(std::string(WatcherStateName(State::kWatching)) == "Watching");
}

}  // namespace
}  // namespace kmt::kube
