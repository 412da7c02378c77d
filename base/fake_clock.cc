// base/fake_clock.cc
#include "base/fake_clock.h"

namespace kmt::base {

FakeClock::FakeClock(WallTime wall)
    : now_(SteadyTime(std::chrono::hours(1000))), wall_origin_(wall), steady_origin_(now_) {}

SteadyTime FakeClock::Now() const {
  std::scoped_lock lock(mu_);
  return now_;
}

WallTime FakeClock::WallNow() const {
  std::scoped_lock lock(mu_);
  return wall_origin_ + std::chrono::duration_cast<WallTime::duration>(now_ - steady_origin_);
}

TimerId FakeClock::RunAfter(Duration delay, std::function<void()> fn) {
  std::scoped_lock lock(mu_);
  TimerId id = next_id_++;
  SteadyTime deadline = now_ + (delay < Duration::zero() ? Duration::zero() : delay);
  timers_.emplace(std::make_pair(deadline, id), std::move(fn));
  deadlines_.emplace(id, deadline);
  return id;
}

bool FakeClock::Cancel(TimerId id) {
  std::scoped_lock lock(mu_);
  auto it = deadlines_.find(id);
  if (it == deadlines_.end()) return false;
  timers_.erase(std::make_pair(it->second, id));
  deadlines_.erase(it);
  return true;
}

void FakeClock::Sleep(Duration d) {
  {
    std::scoped_lock lock(mu_);
    sleeps_.push_back(d);
  }
  if (d > Duration::zero()) Advance(d);
}

bool FakeClock::WaitFor(Duration d, std::condition_variable&, std::unique_lock<std::mutex>& lock,
                        const std::function<bool()>& done) {
  if (done()) return true;
  lock.unlock();
  Sleep(d);
  lock.lock();
  return done();
}

std::vector<Duration> FakeClock::Sleeps() const {
  std::scoped_lock lock(mu_);
  return sleeps_;
}

void FakeClock::Advance(Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  const SteadyTime target = now_ + d;
  while (!timers_.empty() && timers_.begin()->first.first <= target) {
    auto node = timers_.extract(timers_.begin());
    deadlines_.erase(node.key().second);
    if (node.key().first > now_) now_ = node.key().first;
    lock.unlock();
    node.mapped()();  // without the lock: callbacks schedule and cancel timers
    lock.lock();
  }
  if (target > now_) now_ = target;
}

size_t FakeClock::PendingTimers() const {
  std::scoped_lock lock(mu_);
  return timers_.size();
}

Duration FakeClock::NextTimerIn() const {
  std::scoped_lock lock(mu_);
  if (timers_.empty()) return Duration::max();
  return timers_.begin()->first.first - now_;
}

}  // namespace kmt::base
