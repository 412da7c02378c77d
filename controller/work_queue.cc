// controller/work_queue.cc
#include "controller/work_queue.h"

#include <algorithm>

namespace kmt::controller {

WorkQueue::WorkQueue(base::Clock& clock, RateLimiterOptions limits, WorkQueueMetrics* metrics,
                     base::Duration yield_quiet)
    : clock_(clock),
      metrics_(metrics),
      limiter_(clock.Now(), limits),
      max_delay_(limits.max_delay),
      yield_quiet_(yield_quiet) {}

WorkQueue::~WorkQueue() {
  ShutDown();
  std::scoped_lock lock(mu_);
  for (auto& [key, d] : delayed_) clock_.Cancel(d.timer);
  delayed_.clear();
  if (wake_) clock_.Cancel(*wake_);
  wake_.reset();
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_) return;
  if (!dirty_.insert(key).second) return;  // already queued or marked for re-run
  yield_after_done_.erase(key);            // it runs again from the first lane
  if (auto y = yielding_at_.find(key); y != yielding_at_.end()) {
    // Moved to the first lane; it keeps the time it was first queued.
    yielding_.erase(y->second.at);
    yielding_at_.erase(y);
    queue_.push_back(key);
    NoteFirstLaneAddLocked(key);
    DepthLocked();
    cv_.notify_one();
    return;
  }
  if (processing_.count(key)) return;  // Done() queues it again
  PushLocked(key);
}

void WorkQueue::NoteFirstLaneAddLocked(const std::string& key) {
  if (yield_quiet_ <= base::Duration::zero()) return;
  if (last_add_.key != key) other_add_ = std::move(last_add_);
  last_add_ = {key, clock_.Now()};
}

void WorkQueue::PushLocked(const std::string& key) {
  queue_.push_back(key);
  NoteFirstLaneAddLocked(key);
  added_at_.emplace(key, clock_.Now());
  if (metrics_) metrics_->Added();
  DepthLocked();
  cv_.notify_one();
}

void WorkQueue::DepthLocked() const {
  if (metrics_) metrics_->Depth(static_cast<int64_t>(queue_.size() + yielding_.size()));
}

void WorkQueue::YieldLocked(const std::string& key, base::SteadyTime due) {
  yielding_.push_back(key);
  yielding_at_.emplace(key, YieldingKey{std::prev(yielding_.end()), due});
  added_at_.emplace(key, clock_.Now());
  if (metrics_) metrics_->Added();
  DepthLocked();
  cv_.notify_one();
}

void WorkQueue::AddYielding(const std::string& key, base::Duration max_wait) {
  std::scoped_lock lock(mu_);
  if (shutting_down_) return;
  if (dirty_.count(key)) return;  // queued in the first lane, or to run again after Done
  const base::SteadyTime due = clock_.Now() + max_wait;
  if (processing_.count(key)) {
    auto [it, added] = yield_after_done_.emplace(key, due);
    if (!added) it->second = std::min(it->second, due);
    return;
  }
  if (auto y = yielding_at_.find(key); y != yielding_at_.end()) {
    y->second.due = std::min(y->second.due, due);
    return;
  }
  YieldLocked(key, due);
}

bool WorkQueue::YieldingDueLocked() const {
  return !yielding_.empty() && yielding_at_.at(yielding_.front()).due <= clock_.Now();
}

base::SteadyTime WorkQueue::YieldingReadyAtLocked() const {
  if (yield_quiet_ <= base::Duration::zero() || last_add_.key.empty()) {
    return base::SteadyTime::min();  // an empty first lane is enough
  }
  return std::min(yielding_at_.at(yielding_.front()).due, last_add_.at + yield_quiet_);
}

bool WorkQueue::ReadyLocked() const {
  if (!queue_.empty()) return true;
  if (yielding_.empty()) return false;
  return shutting_down_ || YieldingReadyAtLocked() <= clock_.Now();
}

void WorkQueue::WakeAtLocked(base::SteadyTime at) {
  if (wake_ && wake_at_ <= at) return;  // an earlier wake-up is pending
  if (wake_) clock_.Cancel(*wake_);
  wake_at_ = at;
  // The callback takes the lock itself; the clock never runs it inside RunAfter.
  wake_ = clock_.RunAfter(at - clock_.Now(), [this] {
    std::scoped_lock lock(mu_);
    wake_.reset();
    cv_.notify_all();
  });
}

bool WorkQueue::Busy(const std::string& key) const {
  std::scoped_lock lock(mu_);
  if (!queue_.empty()) return true;
  const FirstLaneAdd& other = last_add_.key != key ? last_add_ : other_add_;
  return !other.key.empty() && clock_.Now() - other.at < yield_quiet_;
}

void WorkQueue::Add(const std::string& key) {
  std::scoped_lock lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfterLocked(const std::string& key, base::Duration delay) {
  if (shutting_down_) return;
  if (delay <= base::Duration::zero()) {
    AddLocked(key);
    return;
  }
  const base::SteadyTime ready = clock_.Now() + delay;
  auto it = delayed_.find(key);
  if (it != delayed_.end()) {
    if (it->second.ready <= ready) return;  // an earlier add is already pending
    clock_.Cancel(it->second.timer);
    delayed_.erase(it);
  }
  // The callback takes the lock itself; the clock never runs it inside RunAfter.
  base::TimerId id = clock_.RunAfter(delay, [this, key] {
    std::scoped_lock lock(mu_);
    delayed_.erase(key);
    AddLocked(key);
  });
  delayed_.emplace(key, Delayed{ready, id});
}

void WorkQueue::AddAfter(const std::string& key, base::Duration delay) {
  std::scoped_lock lock(mu_);
  AddAfterLocked(key, delay);
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::scoped_lock lock(mu_);
  if (shutting_down_) return;
  if (metrics_) metrics_->Retried();
  AddAfterLocked(key, limiter_.When(key, clock_.Now()));
}

void WorkQueue::AddRateLimited(const std::string& key, base::Duration not_before) {
  std::scoped_lock lock(mu_);
  if (shutting_down_) return;
  if (metrics_) metrics_->Retried();
  const base::Duration backoff = limiter_.When(key, clock_.Now());
  AddAfterLocked(key, std::max(backoff, std::min(not_before, max_delay_)));
}

void WorkQueue::Forget(const std::string& key) {
  std::scoped_lock lock(mu_);
  limiter_.Forget(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  std::scoped_lock lock(mu_);
  return limiter_.NumRequeues(key);
}

std::string WorkQueue::PopLocked() {
  std::string key;
  // A due yielding key goes ahead of a waiting first lane every other time, so that neither
  // lane stalls the other.
  const bool ahead = !queue_.empty() && YieldingDueLocked() && !due_went_ahead_;
  due_went_ahead_ = ahead;
  if (queue_.empty() || ahead) {
    key = std::move(yielding_.front());
    yielding_.pop_front();
    yielding_at_.erase(key);
  } else {
    key = std::move(queue_.front());
    queue_.pop_front();
    dirty_.erase(key);
  }
  const base::SteadyTime now = clock_.Now();
  DepthLocked();
  if (metrics_) {
    auto it = added_at_.find(key);
    if (it != added_at_.end()) metrics_->QueueLatency(now - it->second);
  }
  added_at_.erase(key);
  processing_.emplace(key, now);
  return key;
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (ReadyLocked()) return PopLocked();
    if (shutting_down_) return std::nullopt;  // and nothing queued: ReadyLocked hands it out
    // Only yielding keys, waiting for a quiet first lane: sleep until one may go.
    if (!yielding_.empty()) WakeAtLocked(YieldingReadyAtLocked());
    cv_.wait(lock);
  }
}

std::optional<std::string> WorkQueue::TryGet() {
  std::scoped_lock lock(mu_);
  if (!ReadyLocked()) return std::nullopt;
  return PopLocked();
}

void WorkQueue::Done(const std::string& key) {
  std::scoped_lock lock(mu_);
  auto it = processing_.find(key);
  if (it == processing_.end()) return;
  if (metrics_) metrics_->WorkDuration(clock_.Now() - it->second);
  processing_.erase(it);
  auto yield = yield_after_done_.find(key);
  if (dirty_.count(key)) {
    // Re-added while it was processing: now it may run again. Shutting down
    // does not drop it, so a draining worker still sees it.
    PushLocked(key);
  } else if (yield != yield_after_done_.end()) {
    YieldLocked(key, yield->second);
  }
  if (yield != yield_after_done_.end()) yield_after_done_.erase(yield);
  if (draining_ && processing_.empty()) cv_.notify_all();
}

void WorkQueue::ShutDown() {
  std::scoped_lock lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

void WorkQueue::ShutDownWithDrain() {
  std::unique_lock<std::mutex> lock(mu_);
  shutting_down_ = true;
  draining_ = true;
  cv_.notify_all();
  cv_.wait(lock, [this] { return processing_.empty(); });
}

bool WorkQueue::ShuttingDown() const {
  std::scoped_lock lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  std::scoped_lock lock(mu_);
  return queue_.size() + yielding_.size();
}

size_t WorkQueue::LenAhead() const {
  std::scoped_lock lock(mu_);
  return queue_.size();
}

size_t WorkQueue::Yielding() const {
  std::scoped_lock lock(mu_);
  return yielding_.size();
}

size_t WorkQueue::Processing() const {
  std::scoped_lock lock(mu_);
  return processing_.size();
}

size_t WorkQueue::WaitingDelayed() const {
  std::scoped_lock lock(mu_);
  return delayed_.size();
}

}  // namespace kmt::controller
