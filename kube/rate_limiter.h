// kube/rate_limiter.h — client-side QPS/burst limiting (a token bucket, as
// client-go's flowcontrol.NewTokenBucketRateLimiter): up to `burst` requests
// go at once, then one every 1/qps seconds. Clock and sleep are injected.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>

namespace kmt::kube {

class TokenBucket {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  using Sleep = std::function<void(std::chrono::nanoseconds)>;

  // qps <= 0 disables limiting.
  TokenBucket(double qps, int burst, Clock clock = std::chrono::steady_clock::now,
              Sleep sleep = nullptr);

  // Takes one token, sleeping until one is available. Thread-safe: callers
  // reserve their slot under the lock and sleep outside it.
  void Wait();
  // Takes a token only if one is available now.
  bool TryTake();

 private:
  std::chrono::nanoseconds Reserve();

  double qps_;
  double burst_;
  Clock clock_;
  Sleep sleep_;
  std::mutex mu_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace kmt::kube
