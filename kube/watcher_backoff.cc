// kube/watcher_backoff.cc
#include "kube/watcher_backoff.h"

#include <algorithm>

namespace kmt::kube {

void WatcherBackoff::Owe(std::optional<std::chrono::seconds> retry_after) {
  owed_ = true;
  retry_after_ = retry_after;
}

std::optional<std::chrono::milliseconds> WatcherBackoff::Take() {
  if (!owed_) return std::nullopt;
  std::chrono::milliseconds delay = Next();
  if (retry_after_)
    delay = std::max(delay, std::min<std::chrono::milliseconds>(*retry_after_, max_));
  ++failures_;
  owed_ = false;
  retry_after_.reset();
  return delay;
}

std::chrono::milliseconds WatcherBackoff::Next() const {
  std::chrono::milliseconds d = initial_;
  for (int i = 0; i < failures_ && d < max_; ++i) d *= 2;
  return std::min(d, max_);
}

}  // namespace kmt::kube
