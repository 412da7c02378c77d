// base/clock.h — time as a seam.
//
// Everything that waits or measures time does it through a Clock, so tests
// run on simulated time (base/fake_clock.h) and never sleep. A Clock tells
// the time (a steady clock for durations and deadlines, a wall clock for
// timestamps written to the API) and runs callbacks later.
//
// RealClock runs its timers on Boost.Asio: one io_context and one thread it
// owns. Callbacks run on that thread, one at a time, and must not block for
// long (they enqueue work; they do not do it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace kmt::base {

using Duration = std::chrono::nanoseconds;
using SteadyTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;
using TimerId = uint64_t;

class Clock {
 public:
  virtual ~Clock() = default;

  // Monotonic time, for deadlines and durations.
  virtual SteadyTime Now() const = 0;

  // Wall-clock time, for timestamps written to the API (RFC 3339).
  virtual WallTime WallNow() const = 0;

  // Runs `fn` once, no earlier than `delay` after Now() (a zero or negative
  // delay means "as soon as possible", still asynchronously). The callback
  // never runs inside RunAfter itself. Returns an id for Cancel().
  virtual TimerId RunAfter(Duration delay, std::function<void()> fn) = 0;

  // Cancels a pending timer. Returns true if it was pending: its callback will
  // then never run. False if it already ran, is running, or was cancelled.
  virtual bool Cancel(TimerId id) = 0;

  // Blocks the calling thread for `d` (nothing for zero or negative). A simulated
  // clock advances by `d` instead.
  virtual void Sleep(Duration d) = 0;

  // Waits up to `d` on `cv` (`lock` held, as condition_variable::wait_for does) until
  // `done()` holds; returns done(). A simulated clock does not wait: unless done() already
  // holds, it sleeps `d` as Sleep does (recorded, time advanced).
  virtual bool WaitFor(Duration d, std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                       const std::function<bool()>& done) = 0;
};

// The process clock: std::chrono clocks and Asio steady timers. The timer thread
// starts with the first RunAfter, so a RealClock that only tells time costs none.
class RealClock : public Clock {
 public:
  RealClock();
  ~RealClock() override;  // cancels pending timers and joins the timer thread
  RealClock(const RealClock&) = delete;
  RealClock& operator=(const RealClock&) = delete;

  SteadyTime Now() const override;
  WallTime WallNow() const override;
  TimerId RunAfter(Duration delay, std::function<void()> fn) override;
  bool Cancel(TimerId id) override;
  void Sleep(Duration d) override;
  bool WaitFor(Duration d, std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               const std::function<bool()>& done) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The process's RealClock, for the components a caller does not give a clock (the default
// argument of their constructors); never destroyed. Tests pass a FakeClock instead.
Clock& SystemClock();

// Kubernetes timestamps. metav1.Time: "2006-01-02T15:04:05Z" (seconds);
// metav1.MicroTime: "2006-01-02T15:04:05.000000Z" (microseconds), always UTC.
std::string FormatRfc3339(WallTime t);
std::string FormatMicroTime(WallTime t);

// Seconds as a double, for metrics.
inline double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace kmt::base
