// base/fake_clock.h — a simulated Clock for tests.
//
// Time stands still until the test calls Advance(); timers whose deadline is
// reached then fire synchronously, on the calling thread, in deadline order
// (ties in the order they were scheduled), each seeing Now() equal to its own
// deadline. Timers scheduled by a firing callback fire in the same Advance()
// if they fall due within it. Thread-safe: other threads may schedule and
// cancel while a test advances.
#pragma once

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "base/clock.h"

namespace kmt::base {

class FakeClock : public Clock {
 public:
  // Starts at an arbitrary steady origin and at `wall` (default
  // 2026-01-01T00:00:00Z) on the wall clock; both advance together.
  explicit FakeClock(WallTime wall = WallTime(std::chrono::seconds(1767225600)));

  SteadyTime Now() const override;
  WallTime WallNow() const override;
  TimerId RunAfter(Duration delay, std::function<void()> fn) override;
  bool Cancel(TimerId id) override;
  // Records `d` (Sleeps()) and advances by it, firing what falls due on the caller's
  // thread.
  void Sleep(Duration d) override;
  // Sleep(d) with `lock` released, unless done() already holds.
  bool WaitFor(Duration d, std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               const std::function<bool()>& done) override;

  // Every Sleep asked for, in order.
  std::vector<Duration> Sleeps() const;

  // Moves time forward by `d` (zero fires what is already due).
  void Advance(Duration d);

  // Number of timers not yet fired or cancelled.
  size_t PendingTimers() const;

  // Delay until the earliest pending timer, or Duration::max() when none.
  Duration NextTimerIn() const;

 private:
  mutable std::mutex mu_;
  SteadyTime now_;
  WallTime wall_origin_;
  SteadyTime steady_origin_;
  TimerId next_id_ = 1;
  // (deadline, id) -> callback; the id breaks ties in scheduling order.
  std::map<std::pair<SteadyTime, TimerId>, std::function<void()>> timers_;
  std::map<TimerId, SteadyTime> deadlines_;
  std::vector<Duration> sleeps_;
};

}  // namespace kmt::base
