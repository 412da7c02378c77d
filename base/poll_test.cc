// base/poll_test.cc
#include "base/poll.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "base/fake_clock.h"

namespace kmt::base {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("PollUntil on a FakeClock waits by advancing it, one interval at a time") {
  FakeClock clock;
  const SteadyTime start = clock.Now();
  int calls = 0;
  CHECK(PollUntil(clock, seconds(1), milliseconds(100), [&] { return ++calls == 4; }));
  CHECK(calls == 4);
  CHECK(clock.Now() - start == milliseconds(300));
  CHECK(clock.Sleeps() ==
        std::vector<Duration>{milliseconds(100), milliseconds(100), milliseconds(100)});
}

TEST_CASE("PollUntil gives up at the deadline, after one last look, and never waits past it") {
  FakeClock clock;
  const SteadyTime start = clock.Now();
  int calls = 0;
  CHECK_FALSE(PollUntil(clock, milliseconds(250), milliseconds(100), [&] {
    ++calls;
    return false;
  }));
  CHECK(calls == 4);  // at 0, 100, 200 and the deadline
  CHECK(clock.Now() - start == milliseconds(250));
  CHECK(clock.Sleeps() ==
        std::vector<Duration>{milliseconds(100), milliseconds(100), milliseconds(50)});
}

TEST_CASE("PollUntil sees a condition met during the last wait") {
  FakeClock clock;
  bool met = false;
  clock.RunAfter(milliseconds(240), [&] { met = true; });
  CHECK(PollUntil(clock, milliseconds(250), milliseconds(100), [&] { return met; }));
}

TEST_CASE("PollUntil on the system clock sees another thread's work") {
  std::atomic<bool> done{false};
  std::thread worker([&] { done = true; });
  CHECK(PollUntil(SystemClock(), seconds(10), Duration::zero(), [&] { return done.load(); }));
  worker.join();
}

TEST_CASE("A Stopwatch measures time passed on its clock") {
  FakeClock clock;
  Stopwatch watch(clock);
  CHECK(watch.Elapsed() == Duration::zero());
  clock.Advance(milliseconds(1500));
  CHECK(watch.Elapsed() == milliseconds(1500));
  CHECK(watch.ElapsedSeconds() == 1.5);
  watch.Restart();
  clock.Advance(milliseconds(20));
  CHECK(watch.Elapsed() == milliseconds(20));
}

}  // namespace
}  // namespace kmt::base
