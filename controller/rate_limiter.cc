// controller/rate_limiter.cc
#include "controller/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace kmt::controller {

RateLimiter::RateLimiter(base::SteadyTime now, RateLimiterOptions opts)
    : opts_(opts), bucket_(opts.qps, opts.burst, now) {}

base::Duration RateLimiter::Backoff(int failures) const {
  // base * 2^failures, computed in floating point so large exponents cap
  // instead of overflowing (client-go does the same).
  double ns = static_cast<double>(opts_.base_delay.count()) * std::pow(2.0, failures);
  if (ns >= static_cast<double>(opts_.max_delay.count())) return opts_.max_delay;
  return base::Duration(static_cast<base::Duration::rep>(ns));
}

base::Duration RateLimiter::When(const std::string& key, base::SteadyTime now) {
  int& failures = failures_[key];
  base::Duration backoff = Backoff(failures);
  ++failures;
  return std::max(backoff, bucket_.Reserve(now));
}

void RateLimiter::Forget(const std::string& key) { failures_.erase(key); }

int RateLimiter::NumRequeues(const std::string& key) const {
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

}  // namespace kmt::controller
