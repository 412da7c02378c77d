// kube/rate_limiter.cc
#include "kube/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace kmt::kube {

TokenBucket::TokenBucket(double qps, int burst, Clock clock, Sleep sleep)
    : qps_(qps),
      burst_(std::max(1, burst)),
      clock_(std::move(clock)),
      sleep_(std::move(sleep)),
      tokens_(std::max(1, burst)),
      last_(clock_()) {
  if (!sleep_) sleep_ = [](std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); };
}

std::chrono::nanoseconds TokenBucket::Reserve() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = clock_();
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
  tokens_ -= 1;  // may go negative: the deficit is this caller's wait
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<int64_t>(-tokens_ / qps_ * 1e9));
}

void TokenBucket::Wait() {
  if (qps_ <= 0) return;
  const std::chrono::nanoseconds wait = Reserve();
  if (wait.count() > 0) sleep_(wait);
}

bool TokenBucket::TryTake() {
  if (qps_ <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = clock_();
  tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
  last_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

}  // namespace kmt::kube
