// kube/rate_limiter.h — token buckets (client-go's flowcontrol.NewTokenBucketRateLimiter,
// golang.org/x/time/rate's reservations): up to `burst` tokens at once, then one every
// 1/qps seconds.
//
// TokenBucketState is the arithmetic alone, with time passed in: the bucket may go into
// debt, and a reservation's delay is when its token is due. The client's QPS limit
// (TokenBucket below) and the controller's retry limiter (controller/rate_limiter.h, on
// the work queue's injected clock) both use it.
#pragma once

#include <chrono>
#include <mutex>

#include "base/clock.h"

namespace kmt::kube {

class TokenBucketState {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // qps <= 0 disables limiting (every reservation is due at once); burst is at least 1.
  TokenBucketState(double qps, int burst, TimePoint now);

  // Takes a token; returns how long until it is due (zero when one was available).
  std::chrono::nanoseconds Reserve(TimePoint now);
  // Takes a token only if one is available now.
  bool TryTake(TimePoint now);

 private:
  void Refill(TimePoint now);  // time never runs backwards here

  double qps_;
  double burst_;
  double tokens_;
  TimePoint last_;
};

// A thread-safe bucket on a clock: Wait() sleeps (Clock::Sleep) until the caller's token
// is due.
class TokenBucket {
 public:
  // qps <= 0 disables limiting.
  TokenBucket(double qps, int burst, base::Clock& clock = base::SystemClock());

  // Takes one token, sleeping until it is due. Callers reserve their slot under the
  // lock and sleep outside it.
  void Wait();
  // Takes a token only if one is available now.
  bool TryTake();

 private:
  base::Clock& clock_;
  std::mutex mu_;
  TokenBucketState state_;
};

}  // namespace kmt::kube
