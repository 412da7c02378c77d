// controller/rate_limiter.h — how long a failing key waits before its retry.
//
// The same policy as controller-runtime's default controller rate limiter
// (client-go workqueue.DefaultTypedControllerRateLimiter): the maximum of
//   - a per-key exponential backoff: base * 2^failures, capped (5 ms → 1000 s);
//   - a global token bucket shared by all keys (10 per second, burst 100),
//     where every retry takes a token and waits until its token is due.
// Pure: time is passed in; the caller owns locking.
#pragma once

#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "kube/rate_limiter.h"

namespace kmt::controller {

struct RateLimiterOptions {
  base::Duration base_delay = std::chrono::milliseconds(5);
  base::Duration max_delay = std::chrono::seconds(1000);
  double qps = 10;
  int burst = 100;
};

class RateLimiter {
 public:
  explicit RateLimiter(base::SteadyTime now, RateLimiterOptions opts = {});

  // The delay before `key`'s next retry; counts one more failure for it.
  base::Duration When(const std::string& key, base::SteadyTime now);

  // Clears the key's failure count (the bucket is global and unaffected).
  void Forget(const std::string& key);

  // Failures counted for the key since its last Forget.
  int NumRequeues(const std::string& key) const;

 private:
  base::Duration Backoff(int failures) const;

  RateLimiterOptions opts_;
  kube::TokenBucketState bucket_;  // reservations on the queue's clock
  std::unordered_map<std::string, int> failures_;
};

}  // namespace kmt::controller
