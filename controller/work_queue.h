// controller/work_queue.h — the queue of VMIM keys ("namespace/name").
//
// Semantics of client-go's workqueue, which controller-runtime builds on:
//   - a key is never handed to two workers at once: while a key is being
//     processed (between Get and Done), adding it again only marks it dirty,
//     and Done puts it back in the queue;
//   - repeated adds of a waiting key collapse into one;
//   - AddAfter(key, d) adds the key once d has elapsed on the Clock; of several
//     pending delayed adds of one key, the earliest wins;
//   - AddRateLimited(key) is AddAfter(key, RateLimiter::When(key)); Forget(key)
//     resets the key's backoff;
//   - AddRateLimited(key, not_before) is the same, but no earlier than
//     not_before (what a server's Retry-After asked), capped at the limiter's
//     max_delay: AddAfter(key, max(When(key), min(not_before, max_delay)));
//   - AddYielding(key, max_wait) queues the key in a second lane for work that
//     can wait (a status write after a release): a yielding key is handed out
//     only when no key waits in the first lane, or once it has waited max_wait
//     (then, oldest first, every other key handed out while the first lane
//     waits, so that neither lane stalls the other). An Add of a yielding key
//     moves it to the first lane; a key already queued there, or re-added
//     while it processes, stays there. Added while the key is processing, it
//     enters the lane at Done. Not in client-go: its workqueue has one lane.
//     With a yield_quiet period, an empty first lane is not enough: a yielding
//     key also waits until no key has entered the first lane for yield_quiet
//     (a burst of adds is still arriving), or until it is due; Get() sleeps
//     until then. Busy(key) tells a worker whether such a burst is on.
//   - ShutDown() refuses new adds and wakes the workers; Get() keeps handing out
//     what is queued, then returns nullopt. ShutDownWithDrain() also waits for
//     the keys being processed to be Done.
// Thread-safe. Delays run on the injected Clock, so tests use FakeClock.
#pragma once

#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "controller/rate_limiter.h"

namespace kmt::controller {

// Hooks for workqueue_* metrics (controller/queue_metrics.h binds them to
// Prometheus). Called with the queue's lock held: implementations must be quick
// and must not call back into the queue.
class WorkQueueMetrics {
 public:
  virtual ~WorkQueueMetrics() = default;
  virtual void Depth(int64_t depth) = 0;                 // after every change
  virtual void Added() = 0;                              // a key entered the queue
  virtual void Retried() = 0;                            // AddRateLimited
  virtual void QueueLatency(base::Duration waited) = 0;  // added → handed out by Get
  virtual void WorkDuration(base::Duration worked) = 0;  // Get → Done
};

class WorkQueue {
 public:
  // `metrics` may be null; it must outlive the queue. `yield_quiet`: see AddYielding above
  // (zero: an empty first lane is enough).
  explicit WorkQueue(base::Clock& clock, RateLimiterOptions limits = {},
                     WorkQueueMetrics* metrics = nullptr,
                     base::Duration yield_quiet = base::Duration::zero());
  ~WorkQueue();  // shuts down and cancels pending delayed adds
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, base::Duration delay);
  void AddRateLimited(const std::string& key);
  void AddRateLimited(const std::string& key, base::Duration not_before);
  void AddYielding(const std::string& key, base::Duration max_wait);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // Blocks until a key is available (it is then "processing" until Done), or
  // returns nullopt once shut down and empty.
  std::optional<std::string> Get();
  // Like Get() but never blocks: nullopt when nothing is queued right now.
  std::optional<std::string> TryGet();
  void Done(const std::string& key);

  void ShutDown();
  void ShutDownWithDrain();
  bool ShuttingDown() const;

  size_t Len() const;             // keys queued in both lanes, not counting those processing
  size_t LenAhead() const;        // keys queued in the first lane: what a yielding key waits for
  size_t Yielding() const;        // keys queued in the yielding lane
  size_t Processing() const;      // keys between Get and Done
  size_t WaitingDelayed() const;  // keys with a pending delayed add
  // Whether work is arriving for keys other than `key`: one waits in the first lane, or
  // entered it less than yield_quiet ago.
  bool Busy(const std::string& key) const;

 private:
  void AddLocked(const std::string& key);
  // Appends `key` to the queue (it is dirty and not processing) and wakes a worker.
  void PushLocked(const std::string& key);
  // `key` entered the first lane now (for Busy and the yield_quiet period).
  void NoteFirstLaneAddLocked(const std::string& key);
  // Hands out the next key: the oldest yielding key when the first lane is empty, or when
  // it is due and the last key was not a due one taken ahead; else the first lane's. Either
  // lane must hold one.
  std::string PopLocked();
  // The yielding lane's oldest key is due: its max_wait has passed.
  bool YieldingDueLocked() const;
  // When the yielding lane's oldest key may go with the first lane empty: once it is due, or
  // once no key has entered the first lane for yield_quiet.
  base::SteadyTime YieldingReadyAtLocked() const;
  // Whether Get() may hand out a key now.
  bool ReadyLocked() const;
  // Wakes the workers at `at` (one timer, the earliest asked for).
  void WakeAtLocked(base::SteadyTime at);
  void YieldLocked(const std::string& key, base::SteadyTime due);
  void DepthLocked() const;
  void AddAfterLocked(const std::string& key, base::Duration delay);

  struct Delayed {
    base::SteadyTime ready;
    base::TimerId timer;
  };

  base::Clock& clock_;
  WorkQueueMetrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;
  std::unordered_map<std::string, base::SteadyTime> processing_;  // key -> Get time
  std::unordered_map<std::string, base::SteadyTime> added_at_;  // key -> time it entered the queue
  std::unordered_map<std::string, Delayed> delayed_;
  // The yielding lane, oldest first, and each key's place and due time in it.
  struct YieldingKey {
    std::list<std::string>::iterator at;
    base::SteadyTime due;
  };
  std::list<std::string> yielding_;
  std::unordered_map<std::string, YieldingKey> yielding_at_;
  // Keys that asked to yield while processing: they enter the lane at Done.
  std::unordered_map<std::string, base::SteadyTime> yield_after_done_;
  RateLimiter limiter_;
  base::Duration max_delay_;  // the limiter's longest backoff: caps a not_before
  bool shutting_down_ = false;
  bool draining_ = false;
  // The last key handed out was a due yielding key taken ahead of a waiting first lane.
  bool due_went_ahead_ = false;
  const base::Duration yield_quiet_;
  // The last two distinct keys to enter the first lane, newest first, and when (Busy).
  struct FirstLaneAdd {
    std::string key;
    base::SteadyTime at{};
  };
  FirstLaneAdd last_add_, other_add_;
  std::optional<base::TimerId> wake_;  // the pending wake-up of Get(), if any
  base::SteadyTime wake_at_{};
};

}  // namespace kmt::controller
