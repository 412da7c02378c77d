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
  // `metrics` may be null; it must outlive the queue.
  explicit WorkQueue(base::Clock& clock, RateLimiterOptions limits = {},
                     WorkQueueMetrics* metrics = nullptr);
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

 private:
  void AddLocked(const std::string& key);
  // Appends `key` to the queue (it is dirty and not processing) and wakes a worker.
  void PushLocked(const std::string& key);
  // Hands out the next key: the oldest yielding key when the first lane is empty, or when
  // it is due and the last key was not a due one taken ahead; else the first lane's. Either
  // lane must hold one.
  std::string PopLocked();
  // The yielding lane's oldest key is due: its max_wait has passed.
  bool YieldingDueLocked() const;
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
};

}  // namespace kmt::controller
