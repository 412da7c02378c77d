// base/poll.h — waiting for something another thread or process brings about.
//
// For the few places that cannot be told when a thing happens and must look again (a test
// against a real server or process, a benchmark harness waiting for a cluster): they poll on a
// Clock, never on std::chrono or std::this_thread directly. Given base::SystemClock() the waits
// are real; given a FakeClock each wait advances it (firing its timers) instead.
#pragma once

#include <functional>

#include "base/clock.h"

namespace kmt::base {

// Calls `done` until it returns true or `timeout` has passed on `clock`, waiting `interval`
// between calls (a zero interval yields the thread instead); returns whether it held. `done`
// is called once more at the deadline, so a condition met during the last wait is seen.
bool PollUntil(Clock& clock, Duration timeout, Duration interval,
               const std::function<bool()>& done);

// Time passed on a clock since the watch was made (or last restarted).
class Stopwatch {
 public:
  explicit Stopwatch(const Clock& clock = SystemClock()) : clock_(clock), start_(clock.Now()) {}
  Duration Elapsed() const { return clock_.Now() - start_; }
  double ElapsedSeconds() const { return Seconds(Elapsed()); }
  void Restart() { start_ = clock_.Now(); }

 private:
  const Clock& clock_;
  SteadyTime start_;
};

}  // namespace kmt::base
