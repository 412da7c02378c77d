// controller/rate_limiter_test.cc
#include "controller/rate_limiter.h"

#include <catch2/catch.hpp>

namespace kmt::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const base::SteadyTime kT0 = base::SteadyTime(std::chrono::hours(1));

TEST_CASE("Per-key backoff doubles from 5 ms and caps at 1000 s") {
  RateLimiter limiter(kT0);
  // The bucket has 100 tokens; stay under it so only the backoff shows.
  auto [n, expected] = GENERATE(table<int, base::Duration>({
      {1, milliseconds(5)},
      {2, milliseconds(10)},
      {3, milliseconds(20)},
      {4, milliseconds(40)},
      {10, milliseconds(2560)},
      {18, milliseconds(655360)},
      {19, seconds(1000)},  // 5 ms * 2^18 = 1310.72 s > 1000 s
      {60, seconds(1000)},
      {90, seconds(1000)},  // 2^89 would overflow an integer
  }));
  CAPTURE(n);
  base::Duration last{};
  for (int i = 0; i < n; ++i) last = limiter.When("ns/a", kT0);
  REQUIRE(last == expected);
  REQUIRE(limiter.NumRequeues("ns/a") == n);
}

TEST_CASE("Backoff is per key and Forget resets it") {
  RateLimiter limiter(kT0);
  REQUIRE(limiter.When("ns/a", kT0) == milliseconds(5));
  REQUIRE(limiter.When("ns/a", kT0) == milliseconds(10));
  REQUIRE(limiter.When("ns/b", kT0) == milliseconds(5));
  limiter.Forget("ns/a");
  REQUIRE(limiter.NumRequeues("ns/a") == 0);
  REQUIRE(limiter.NumRequeues("ns/b") == 1);
  REQUIRE(limiter.When("ns/a", kT0) == milliseconds(5));
}

TEST_CASE("The token bucket allows a burst of 100, then 10 per second") {
  RateLimiter limiter(kT0);
  // 100 distinct keys each fail once: only the 5 ms backoff applies.
  for (int i = 0; i < 100; ++i) {
    REQUIRE(limiter.When("ns/k" + std::to_string(i), kT0) == milliseconds(5));
  }
  // The bucket is empty: the 101st waits 100 ms, the 102nd 200 ms.
  REQUIRE(limiter.When("ns/x", kT0) == milliseconds(100));
  REQUIRE(limiter.When("ns/y", kT0) == milliseconds(200));
  // 1 s later, 10 tokens have been refilled, paying back the 2 in debt.
  REQUIRE(limiter.When("ns/z", kT0 + seconds(1)) == milliseconds(5));
  // Forget does not give tokens back.
  limiter.Forget("ns/x");
  REQUIRE(limiter.NumRequeues("ns/z") == 1);
}

TEST_CASE("The bucket never holds more than its burst") {
  kube::TokenBucketState bucket(10, 100, kT0);
  const base::SteadyTime later = kT0 + std::chrono::hours(1);
  for (int i = 0; i < 100; ++i) REQUIRE(bucket.Reserve(later) == base::Duration::zero());
  REQUIRE(bucket.Reserve(later) == milliseconds(100));
}

}  // namespace
}  // namespace kmt::controller
