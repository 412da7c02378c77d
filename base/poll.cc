// base/poll.cc
#include "base/poll.h"

#include <algorithm>
#include <thread>

namespace kmt::base {

bool PollUntil(Clock& clock, Duration timeout, Duration interval,
               const std::function<bool()>& done) {
  const SteadyTime deadline = clock.Now() + timeout;
  while (clock.Now() < deadline) {
    if (done()) return true;
    if (interval > Duration::zero()) {
      clock.Sleep(std::min(interval, deadline - clock.Now()));
    } else {
      std::this_thread::yield();
    }
  }
  return done();
}

}  // namespace kmt::base
