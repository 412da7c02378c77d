// kube/rate_limiter.cc
#include "kube/rate_limiter.h"

#include <algorithm>

namespace kmt::kube {

TokenBucketState::TokenBucketState(double qps, int burst, TimePoint now)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(std::max(1, burst)), last_(now) {}

void TokenBucketState::Refill(TimePoint now) {
  if (now <= last_) return;
  tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
  last_ = now;
}

std::chrono::nanoseconds TokenBucketState::Reserve(TimePoint now) {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  Refill(now);
  tokens_ -= 1;  // may go negative: the deficit is this reservation's wait
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(-tokens_ / qps_));
}

bool TokenBucketState::TryTake(TimePoint now) {
  if (qps_ <= 0) return true;
  Refill(now);
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

TokenBucket::TokenBucket(double qps, int burst, base::Clock& clock)
    : clock_(clock), state_(qps, burst, clock_.Now()) {}

void TokenBucket::Wait() {
  std::chrono::nanoseconds wait;
  {
    std::scoped_lock lock(mu_);
    wait = state_.Reserve(clock_.Now());
  }
  if (wait.count() > 0) clock_.Sleep(wait);
}

bool TokenBucket::TryTake() {
  std::scoped_lock lock(mu_);
  return state_.TryTake(clock_.Now());
}

}  // namespace kmt::kube
