// kube/watcher_backoff.h — how long a Watcher waits after a failure (its backoff policy,
// apart from its states, as kube-rs's watcher takes a Backoff).
//
// Exponential: `initial`, doubled per consecutive failure, capped at `max`; no shorter
// than a 429/5xx's Retry-After (itself capped at `max`). A success resets it. A failure
// is owed (Owe) when it happens and waited (Take) before the next step, so a step that
// fails returns at once with its error.
#pragma once

#include <chrono>
#include <optional>

namespace kmt::kube {

class WatcherBackoff {
 public:
  WatcherBackoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : initial_(initial), max_(max) {}

  // A failure (or a stream that ended without a word): the next step waits first, no
  // shorter than `retry_after` when the server asked for one.
  void Owe(std::optional<std::chrono::seconds> retry_after = std::nullopt);
  // The wait owed before the next step, if any; taking it counts one more consecutive
  // failure.
  std::optional<std::chrono::milliseconds> Take();
  // A success: the next failure waits `initial` again.
  void Reset() { failures_ = 0; }

  int consecutive_failures() const { return failures_; }
  // The delay the next failure will wait (without a Retry-After).
  std::chrono::milliseconds Next() const;

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  int failures_ = 0;
  bool owed_ = false;
  std::optional<std::chrono::seconds> retry_after_;  // of the failure owed
};

}  // namespace kmt::kube
