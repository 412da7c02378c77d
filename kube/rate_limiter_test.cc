// kube/rate_limiter_test.cc
#include "kube/rate_limiter.h"

#include <catch2/catch.hpp>

#include "base/fake_clock.h"

namespace kmt::kube {
namespace {

using namespace std::chrono_literals;

struct SimTime {
  base::FakeClock clock;
  TokenBucket Make(double qps, int burst) { return {qps, burst, clock}; }
};

TEST_CASE("Burst goes at once, then one request per 1/qps") {
  SimTime t;
  TokenBucket b = t.Make(10, 3);
  for (int i = 0; i < 3; ++i) b.Wait();
  CHECK(t.clock.Sleeps().empty());
  b.Wait();
  b.Wait();
  CHECK(t.clock.Sleeps() == std::vector<std::chrono::nanoseconds>{100ms, 100ms});
}

TEST_CASE("Idle time refills up to the burst, not beyond") {
  SimTime t;
  TokenBucket b = t.Make(10, 2);
  b.Wait();
  b.Wait();
  t.clock.Advance(10s);
  CHECK(b.TryTake());
  CHECK(b.TryTake());
  CHECK_FALSE(b.TryTake());
  t.clock.Advance(100ms);
  CHECK(b.TryTake());
}

TEST_CASE("qps <= 0 disables limiting") {
  SimTime t;
  TokenBucket b = t.Make(0, 1);
  for (int i = 0; i < 100; ++i) b.Wait();
  CHECK(t.clock.Sleeps().empty());
}

TEST_CASE("Reservations made at one instant queue up behind each other's debt") {
  const std::chrono::steady_clock::time_point t0{};
  TokenBucketState s(10, 2, t0);
  CHECK(s.Reserve(t0) == 0ns);
  CHECK(s.Reserve(t0) == 0ns);
  CHECK(s.Reserve(t0) == 100ms);
  CHECK(s.Reserve(t0) == 200ms);
  CHECK_FALSE(s.TryTake(t0));          // in debt: nothing to take now
  CHECK(s.Reserve(t0 - 1s) == 300ms);  // time running backwards refills nothing
  CHECK(s.TryTake(t0 + 400ms));        // the debt is paid and one token is back
}

}  // namespace
}  // namespace kmt::kube
