// controller/work_queue_test.cc — the queue on simulated time.
#include "controller/work_queue.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/fake_clock.h"

namespace kmt::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Records every hook call, to check the metrics wiring.
struct RecordingMetrics : WorkQueueMetrics {
  int64_t depth = 0;
  int adds = 0;
  int retries = 0;
  std::vector<base::Duration> latencies;
  std::vector<base::Duration> durations;
  void Depth(int64_t d) override { depth = d; }
  void Added() override { ++adds; }
  void Retried() override { ++retries; }
  void QueueLatency(base::Duration d) override { latencies.push_back(d); }
  void WorkDuration(base::Duration d) override { durations.push_back(d); }
};

std::vector<std::string> Drain(WorkQueue& q) {
  std::vector<std::string> keys;
  while (auto key = q.TryGet()) {
    keys.push_back(*key);
    q.Done(*key);
  }
  return keys;
}

TEST_CASE("Repeated adds of a waiting key collapse, order is kept") {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.Add("ns/a");
  q.Add("ns/b");
  q.Add("ns/a");
  q.Add("ns/b");
  q.Add("ns/c");
  REQUIRE(q.Len() == 3);
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/a", "ns/b", "ns/c"});
}

TEST_CASE("A key re-added while processing runs again only after Done") {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.Add("ns/a");
  auto first = q.TryGet();
  REQUIRE(first == "ns/a");
  q.Add("ns/a");
  q.Add("ns/a");
  // Another worker must not get the same key while it is processing.
  REQUIRE(q.Len() == 0);
  REQUIRE_FALSE(q.TryGet().has_value());
  q.Done("ns/a");
  REQUIRE(q.Len() == 1);
  REQUIRE(q.TryGet() == "ns/a");
  q.Done("ns/a");
  REQUIRE_FALSE(q.TryGet().has_value());
}

TEST_CASE("Workers on threads never process one key concurrently") {
  base::FakeClock clock;
  WorkQueue q(clock);
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  workers.reserve(4);
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        int now = ++in_flight;
        int prev = max_in_flight.load();
        while (now > prev && !max_in_flight.compare_exchange_weak(prev, now)) {
        }
        std::this_thread::yield();
        --in_flight;
        ++processed;
        q.Done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) q.Add("ns/same");
  q.ShutDownWithDrain();
  for (auto& t : workers) t.join();
  REQUIRE(max_in_flight.load() == 1);
  REQUIRE(processed.load() >= 1);
  REQUIRE(q.Len() == 0);
}

TEST_CASE("AddAfter adds once the delay elapses; the earliest pending add wins") {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("ns/a", seconds(10));
  q.AddAfter("ns/a", seconds(30));  // later: ignored
  q.AddAfter("ns/b", seconds(20));
  q.AddAfter("ns/b", seconds(5));              // earlier: replaces
  q.AddAfter("ns/c", base::Duration::zero());  // immediate
  REQUIRE(q.Len() == 1);
  REQUIRE(q.WaitingDelayed() == 2);
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/c"});
  clock.Advance(seconds(4));
  REQUIRE(q.Len() == 0);
  clock.Advance(seconds(1));
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/b"});
  clock.Advance(seconds(5));
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/a"});
  clock.Advance(seconds(60));
  REQUIRE(q.Len() == 0);
  REQUIRE(clock.PendingTimers() == 0);
}

TEST_CASE("AddRateLimited retries on the exact backoff sequence") {
  base::FakeClock clock;
  WorkQueue q(clock);
  const base::SteadyTime start = clock.Now();
  std::vector<int64_t> retry_at_ms;
  q.Add("ns/a");
  for (int attempt = 0; attempt < 6; ++attempt) {
    auto key = q.TryGet();
    REQUIRE(key == "ns/a");
    retry_at_ms.push_back((clock.Now() - start) / milliseconds(1));
    q.AddRateLimited(*key);  // the reconcile failed
    q.Done(*key);
    clock.Advance(clock.NextTimerIn());
  }
  // Attempts at 0, then +5, +10, +20, +40, +80 ms.
  REQUIRE(retry_at_ms == std::vector<int64_t>{0, 5, 15, 35, 75, 155});
  REQUIRE(q.NumRequeues("ns/a") == 6);
  q.Forget("ns/a");
  REQUIRE(q.NumRequeues("ns/a") == 0);
  REQUIRE(q.TryGet() == "ns/a");
  q.AddRateLimited("ns/a");
  q.Done("ns/a");
  REQUIRE(clock.NextTimerIn() == milliseconds(5));
}

TEST_CASE("AddRateLimited with not_before: no earlier than asked, capped at max_delay") {
  base::FakeClock clock;
  RateLimiterOptions limits;
  limits.max_delay = seconds(30);
  WorkQueue q(clock, limits);
  struct Row {
    base::Duration not_before;
    base::Duration expected;  // with the key's backoff at 5 ms, then 10 ms, ...
  };
  const Row row = GENERATE(values<Row>({
      {seconds(7), seconds(7)},            // Retry-After longer than the backoff
      {seconds(0), milliseconds(5)},       // shorter: the backoff wins
      {milliseconds(2), milliseconds(5)},  //
      {seconds(3600), seconds(30)},        // capped at the limiter's max_delay
  }));
  CAPTURE(row.not_before.count());
  q.AddRateLimited("ns/a", row.not_before);
  REQUIRE(q.NumRequeues("ns/a") == 1);  // counts a failure like AddRateLimited
  REQUIRE(clock.NextTimerIn() == row.expected);
  clock.Advance(row.expected - milliseconds(1));
  REQUIRE(q.Len() == 0);
  clock.Advance(milliseconds(1));
  REQUIRE(q.TryGet() == "ns/a");
}

TEST_CASE("The global bucket spreads a burst of failures at 10 per second") {
  base::FakeClock clock;
  WorkQueue q(clock);
  for (int i = 0; i < 120; ++i) q.AddRateLimited("ns/k" + std::to_string(i));
  clock.Advance(milliseconds(5));
  REQUIRE(q.Len() == 100);  // the burst
  clock.Advance(milliseconds(95));
  REQUIRE(q.Len() == 101);  // one more every 100 ms
  clock.Advance(milliseconds(1000));
  REQUIRE(q.Len() == 111);
  clock.Advance(milliseconds(900));
  REQUIRE(q.Len() == 120);
}

TEST_CASE("ShutDown refuses adds, hands out what is queued, then ends Get") {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.Add("ns/a");
  q.AddAfter("ns/b", seconds(1));
  q.ShutDown();
  REQUIRE(q.ShuttingDown());
  q.Add("ns/c");
  clock.Advance(seconds(2));  // the delayed add is refused too
  REQUIRE(q.Get() == "ns/a");
  q.Done("ns/a");
  REQUIRE_FALSE(q.Get().has_value());
}

TEST_CASE("ShutDownWithDrain waits for keys being processed") {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.Add("ns/a");
  auto key = q.Get();
  REQUIRE(key == "ns/a");
  std::atomic<bool> drained{false};
  std::thread t([&] {
    q.ShutDownWithDrain();
    drained = true;
  });
  // Wait (bounded) until the other thread has marked the queue as shutting down.
  while (!q.ShuttingDown()) std::this_thread::yield();
  REQUIRE_FALSE(drained.load());
  q.Done("ns/a");
  t.join();
  REQUIRE(drained.load());
}

TEST_CASE("A blocked Get wakes up on ShutDown") {
  base::FakeClock clock;
  WorkQueue q(clock);
  std::optional<std::string> got = "unset";
  std::thread t([&] { got = q.Get(); });
  q.ShutDown();
  t.join();
  REQUIRE_FALSE(got.has_value());
}

TEST_CASE("Metrics hooks see depth, adds, retries, latency and work duration") {
  base::FakeClock clock;
  RecordingMetrics m;
  WorkQueue q(clock, {}, &m);
  q.Add("ns/a");
  q.Add("ns/a");  // collapsed: not an add
  q.Add("ns/b");
  REQUIRE(m.adds == 2);
  REQUIRE(m.depth == 2);
  clock.Advance(milliseconds(30));
  auto key = q.TryGet();
  REQUIRE(m.depth == 1);
  clock.Advance(milliseconds(70));
  q.AddRateLimited(*key);
  q.Done(*key);
  REQUIRE(m.retries == 1);
  REQUIRE(m.latencies == std::vector<base::Duration>{milliseconds(30)});
  REQUIRE(m.durations == std::vector<base::Duration>{milliseconds(70)});
  clock.Advance(milliseconds(5));
  REQUIRE(m.adds == 3);
  REQUIRE(m.depth == 2);
}

TEST_CASE("A yielding key is handed out once no other key waits") {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.Add("ns/a");
  q.AddYielding("ns/y", seconds(1));
  q.Add("ns/b");
  CHECK(q.Len() == 3);
  CHECK(q.LenAhead() == 2);
  CHECK(q.Yielding() == 1);
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/a", "ns/b", "ns/y"});
  CHECK(q.Len() == 0);
}

TEST_CASE("A yielding key that has waited max_wait goes ahead of the others") {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.AddYielding("ns/y", seconds(1));
  q.AddYielding("ns/z", seconds(2));
  q.Add("ns/a");
  clock.Advance(milliseconds(999));
  q.Add("ns/b");
  auto first = q.TryGet();
  REQUIRE(first == "ns/a");
  q.Done(*first);
  clock.Advance(milliseconds(1));
  // ns/y is due, ns/z is not: ns/y, then the first lane, then ns/z.
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/y", "ns/b", "ns/z"});
}

TEST_CASE("Due yielding keys and the first lane take turns; neither stalls the other") {
  base::FakeClock clock;
  WorkQueue q(clock);
  for (const char* y : {"ns/y1", "ns/y2", "ns/y3"}) q.AddYielding(y, seconds(1));
  for (const char* a : {"ns/a1", "ns/a2", "ns/a3", "ns/a4"}) q.Add(a);
  auto first = q.TryGet();  // none is due yet: the first lane
  REQUIRE(first == "ns/a1");
  q.Done(*first);
  clock.Advance(seconds(1));
  // All three are due: one of them, one of the first lane, and so on; once the first lane is
  // empty, the rest in a row.
  REQUIRE(Drain(q) ==
          std::vector<std::string>{"ns/y1", "ns/a2", "ns/y2", "ns/a3", "ns/y3", "ns/a4"});
  // A yielding key handed out because the first lane was empty does not count as a turn.
  q.AddYielding("ns/y4", seconds(1));
  q.AddYielding("ns/y5", seconds(1));
  auto y4 = q.TryGet();
  REQUIRE(y4 == "ns/y4");
  q.Done(*y4);
  clock.Advance(seconds(1));
  q.Add("ns/a5");
  q.Add("ns/a6");
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/y5", "ns/a5", "ns/a6"});
}

TEST_CASE("Add moves a yielding key to the first lane; AddYielding never moves one back") {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.AddYielding("ns/y", seconds(1));
  q.Add("ns/a");
  q.Add("ns/y");
  CHECK(q.Yielding() == 0);
  CHECK(q.LenAhead() == 2);
  q.AddYielding("ns/a", seconds(1));  // queued ahead already: stays there
  q.AddYielding("ns/y", seconds(1));
  q.Add("ns/b");
  CHECK(q.Yielding() == 0);
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/a", "ns/y", "ns/b"});
}

TEST_CASE("Repeated AddYielding collapses and keeps the earliest due time") {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.AddYielding("ns/y", seconds(5));
  q.AddYielding("ns/y", seconds(1));
  q.AddYielding("ns/y", seconds(9));
  CHECK(q.Yielding() == 1);
  q.Add("ns/a");
  clock.Advance(seconds(1));
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/y", "ns/a"});
}

TEST_CASE("AddYielding while processing: the key enters its lane at Done, unless re-added") {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.Add("ns/y");
  auto key = q.TryGet();
  REQUIRE(key == "ns/y");
  q.AddYielding("ns/y", seconds(1));
  CHECK(q.Len() == 0);  // never handed to a second worker
  CHECK_FALSE(q.TryGet().has_value());
  q.Add("ns/a");
  q.Done(*key);
  CHECK(q.Yielding() == 1);
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/a", "ns/y"});

  // Re-added while processing as well: it runs again from the first lane.
  q.Add("ns/y");
  key = q.TryGet();
  q.AddYielding("ns/y", seconds(1));
  q.Add("ns/y");
  q.Add("ns/b");
  q.Done(*key);
  CHECK(q.Yielding() == 0);
  REQUIRE(Drain(q) == std::vector<std::string>{"ns/b", "ns/y"});

  // Added to the first lane, then asked to yield, while processing: the first lane wins.
  q.Add("ns/y");
  key = q.TryGet();
  q.Add("ns/y");
  q.AddYielding("ns/y", seconds(1));
  q.Done(*key);
  CHECK(q.Yielding() == 0);
  CHECK(q.LenAhead() == 1);
}

TEST_CASE("Get wakes for a yielding key; shut down, yielding keys are still handed out") {
  base::FakeClock clock;
  WorkQueue q(clock);
  std::optional<std::string> got;
  std::thread t([&] { got = q.Get(); });
  q.AddYielding("ns/y", seconds(1));
  t.join();
  REQUIRE(got == "ns/y");
  q.Done(*got);
  q.AddYielding("ns/z", seconds(1));
  q.ShutDown();
  q.AddYielding("ns/refused", seconds(1));
  REQUIRE(q.Get() == "ns/z");
  REQUIRE_FALSE(q.Get().has_value());
}

TEST_CASE("Metrics count both lanes") {
  base::FakeClock clock;
  RecordingMetrics m;
  WorkQueue q(clock, {}, &m);
  q.AddYielding("ns/y", seconds(1));
  q.Add("ns/a");
  REQUIRE(m.adds == 2);
  REQUIRE(m.depth == 2);
  q.Add("ns/y");  // moved to the first lane: not another add
  REQUIRE(m.adds == 2);
  REQUIRE(m.depth == 2);
  clock.Advance(milliseconds(40));
  REQUIRE(Drain(q).size() == 2);
  REQUIRE(m.depth == 0);
  REQUIRE(m.latencies == std::vector<base::Duration>{milliseconds(40), milliseconds(40)});
}

TEST_CASE("With yield_quiet, a yielding key also waits until no key has been added for that long") {
  base::FakeClock clock;
  WorkQueue q(clock, {}, nullptr, milliseconds(200));
  q.Add("ns/a");
  q.AddYielding("ns/y", seconds(5));
  auto a = q.TryGet();
  REQUIRE(a == "ns/a");
  q.Done(*a);
  CHECK_FALSE(q.TryGet().has_value());  // ns/a came in just now: the burst may go on
  clock.Advance(milliseconds(150));
  q.Add("ns/b");  // it does: the quiet period starts again
  auto b = q.TryGet();
  REQUIRE(b == "ns/b");
  q.Done(*b);
  clock.Advance(milliseconds(199));
  CHECK_FALSE(q.TryGet().has_value());
  CHECK(q.Len() == 1);
  clock.Advance(milliseconds(1));
  REQUIRE(q.TryGet() == "ns/y");
}

TEST_CASE("With yield_quiet, a yielding key still goes once due, however busy the first lane") {
  base::FakeClock clock;
  WorkQueue q(clock, {}, nullptr, milliseconds(200));
  q.AddYielding("ns/y", seconds(1));
  for (int i = 0; i < 9; ++i) {
    clock.Advance(milliseconds(100));
    q.Add("ns/a" + std::to_string(i));
    auto a = q.TryGet();
    REQUIRE(a == "ns/a" + std::to_string(i));
    q.Done(*a);
    CHECK_FALSE(q.TryGet().has_value());
  }
  clock.Advance(milliseconds(100));  // 1 s: due, although ns/a8 came 100 ms ago
  REQUIRE(q.TryGet() == "ns/y");
}

TEST_CASE("A blocked Get sleeps until the quiet period is over") {
  base::FakeClock clock;
  WorkQueue q(clock, {}, nullptr, milliseconds(200));
  q.Add("ns/a");
  auto a = q.Get();
  q.Done(*a);
  q.AddYielding("ns/y", seconds(5));
  std::atomic<bool> returned{false};
  std::optional<std::string> got;
  std::thread t([&] {
    got = q.Get();
    returned = true;
  });
  // The worker arms one wake-up for the end of the quiet period and sleeps.
  while (clock.PendingTimers() == 0) std::this_thread::yield();
  CHECK_FALSE(returned.load());
  clock.Advance(milliseconds(200));
  t.join();
  REQUIRE(got == "ns/y");
  q.Done(*got);
  // Shut down, a yielding key waits for nothing.
  q.Add("ns/b");
  auto b = q.Get();
  q.Done(*b);
  q.AddYielding("ns/z", seconds(5));
  q.ShutDown();
  REQUIRE(q.Get() == "ns/z");
  REQUIRE_FALSE(q.Get().has_value());
}

TEST_CASE("Busy: another key waits, or entered the first lane less than yield_quiet ago") {
  base::FakeClock clock;
  WorkQueue q(clock, {}, nullptr, milliseconds(200));
  CHECK_FALSE(q.Busy("ns/a"));
  q.Add("ns/a");
  CHECK(q.Busy("ns/b"));  // ns/a waits
  auto a = q.TryGet();
  REQUIRE(a == "ns/a");
  CHECK_FALSE(q.Busy("ns/a"));  // its own add is no burst
  CHECK(q.Busy("ns/b"));        // ns/a's, just now, is one for ns/b
  q.Done(*a);
  clock.Advance(milliseconds(200));
  CHECK_FALSE(q.Busy("ns/b"));
  q.Add("ns/b");
  auto b = q.TryGet();
  REQUIRE(b == "ns/b");
  CHECK(q.Busy("ns/a"));        // ns/b came in just now
  CHECK_FALSE(q.Busy("ns/b"));  // ns/a came 200 ms ago
  q.Done(*b);
  // Without a quiet period, only a waiting key makes a burst.
  WorkQueue plain(clock);
  plain.Add("ns/a");
  CHECK(plain.Busy("ns/b"));
  auto p = plain.TryGet();
  REQUIRE(p == "ns/a");
  CHECK_FALSE(plain.Busy("ns/b"));
}

}  // namespace
}  // namespace kmt::controller
