// base/clock_test.cc
#include "base/clock.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/fake_clock.h"

namespace kmt::base {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("FakeClock fires timers in deadline order, each at its own time") {
  FakeClock clock;
  const SteadyTime start = clock.Now();
  std::vector<std::string> fired;
  auto record = [&](const std::string& name) {
    return [&, name] {
      fired.push_back(name + "@" + std::to_string((clock.Now() - start) / milliseconds(1)));
    };
  };
  clock.RunAfter(milliseconds(30), record("c"));
  clock.RunAfter(milliseconds(10), record("a"));
  clock.RunAfter(milliseconds(10), record("a2"));
  TimerId cancelled = clock.RunAfter(milliseconds(20), record("b"));
  REQUIRE(clock.PendingTimers() == 4);
  REQUIRE(clock.NextTimerIn() == milliseconds(10));
  REQUIRE(clock.Cancel(cancelled));
  REQUIRE_FALSE(clock.Cancel(cancelled));

  clock.Advance(milliseconds(9));
  REQUIRE(fired.empty());
  clock.Advance(milliseconds(25));
  REQUIRE(fired == std::vector<std::string>{"a@10", "a2@10", "c@30"});
  REQUIRE(clock.Now() - start == milliseconds(34));
  REQUIRE(clock.PendingTimers() == 0);
  REQUIRE(clock.NextTimerIn() == Duration::max());
}

TEST_CASE("FakeClock fires timers scheduled by a callback within the same Advance") {
  FakeClock clock;
  int fired = 0;
  clock.RunAfter(seconds(1), [&] {
    ++fired;
    clock.RunAfter(seconds(1), [&] { ++fired; });
    clock.RunAfter(seconds(5), [&] { ++fired; });
  });
  clock.Advance(seconds(2));
  REQUIRE(fired == 2);
  REQUIRE(clock.PendingTimers() == 1);
  clock.Advance(seconds(4));
  REQUIRE(fired == 3);
}

TEST_CASE("FakeClock wall time advances with steady time") {
  FakeClock clock;
  REQUIRE(FormatRfc3339(clock.WallNow()) == "2026-01-01T00:00:00Z");
  clock.Advance(milliseconds(1500));
  REQUIRE(FormatMicroTime(clock.WallNow()) == "2026-01-01T00:00:01.500000Z");
}

TEST_CASE("RealClock runs a timer on its thread and honours Cancel") {
  RealClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool fired = false;
  bool cancelled_fired = false;
  TimerId never = clock.RunAfter(seconds(3600), [&] { cancelled_fired = true; });
  REQUIRE(clock.Cancel(never));
  clock.RunAfter(milliseconds(1), [&] {
    std::scoped_lock lock(mu);
    fired = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  REQUIRE(cv.wait_for(lock, seconds(10), [&] { return fired; }));
  REQUIRE_FALSE(cancelled_fired);
}

TEST_CASE("FakeClock's Sleep records the request and advances, firing what falls due") {
  FakeClock clock;
  const SteadyTime start = clock.Now();
  int fired = 0;
  clock.RunAfter(milliseconds(150), [&] { ++fired; });
  clock.Sleep(milliseconds(100));
  REQUIRE(fired == 0);
  clock.Sleep(Duration::zero());
  clock.Sleep(milliseconds(100));
  REQUIRE(fired == 1);
  REQUIRE(clock.Now() - start == milliseconds(200));
  REQUIRE(clock.Sleeps() ==
          std::vector<Duration>{milliseconds(100), Duration::zero(), milliseconds(100)});
}

TEST_CASE("RealClock's Sleep blocks for at least the duration; SystemClock is one clock") {
  RealClock clock;
  const SteadyTime start = clock.Now();
  clock.Sleep(milliseconds(20));
  REQUIRE(clock.Now() - start >= milliseconds(20));
  clock.Sleep(milliseconds(-5));  // returns at once
  REQUIRE(&SystemClock() == &SystemClock());
  REQUIRE(SystemClock().WallNow().time_since_epoch() > Duration::zero());
}

TEST_CASE("WaitFor: RealClock waits until done or the duration, FakeClock records and advances") {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  RealClock real;
  std::thread waker([&] {
    std::this_thread::sleep_for(milliseconds(20));
    std::scoped_lock lock(mu);
    done = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(real.WaitFor(seconds(30), cv, lock, [&] { return done; }));  // woken, not 30 s
  }
  waker.join();
  {
    std::unique_lock<std::mutex> lock(mu);
    done = false;
    REQUIRE_FALSE(real.WaitFor(milliseconds(5), cv, lock, [&] { return done; }));
  }
  FakeClock fake;
  const SteadyTime start = fake.Now();
  std::unique_lock<std::mutex> lock(mu);
  REQUIRE_FALSE(fake.WaitFor(seconds(3), cv, lock, [&] { return done; }));
  REQUIRE(lock.owns_lock());
  done = true;
  REQUIRE(fake.WaitFor(seconds(5), cv, lock, [&] { return done; }));  // done: no sleep
  REQUIRE(fake.Now() - start == seconds(3));
  REQUIRE(fake.Sleeps() == std::vector<Duration>{seconds(3)});
}

TEST_CASE("Kubernetes timestamps format") {
  struct Row {
    int64_t epoch_micros;
    std::string micro;    // FormatMicroTime
    std::string seconds;  // FormatRfc3339: sub-second digits dropped
  };
  auto row = GENERATE(values<Row>({
      {1796003909000000, "2026-11-30T01:58:29.000000Z", "2026-11-30T01:58:29Z"},
      {1796003909123456, "2026-11-30T01:58:29.123456Z", "2026-11-30T01:58:29Z"},
      {1796003909500000, "2026-11-30T01:58:29.500000Z", "2026-11-30T01:58:29Z"},
      {1796003909999999, "2026-11-30T01:58:29.999999Z", "2026-11-30T01:58:29Z"},
      {1709252999000000, "2024-03-01T00:29:59.000000Z", "2024-03-01T00:29:59Z"},
      {0, "1970-01-01T00:00:00.000000Z", "1970-01-01T00:00:00Z"},
  }));
  CAPTURE(row.epoch_micros);
  const WallTime t(
      std::chrono::duration_cast<WallTime::duration>(std::chrono::microseconds(row.epoch_micros)));
  REQUIRE(FormatMicroTime(t) == row.micro);
  REQUIRE(FormatRfc3339(t) == row.seconds);
}

}  // namespace
}  // namespace kmt::base
