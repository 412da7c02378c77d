// http/handler_pool.h — the threads that run request handlers, apart from the server's I/O
// threads, so a slow handler (an admission review waiting on a SubjectAccessReview) never
// stalls an accept, a handshake or a read.
//
// A fixed number of threads and a bounded queue. TrySubmit never blocks: when `max_queued`
// jobs already wait it refuses, and the server answers 503 at once instead of holding the
// request in memory. Stop() runs every job already queued, then joins the threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kmt::http {

class HandlerPool {
 public:
  // `threads` >= 1 (0 is taken as 1); `max_queued` >= 1 jobs may wait for a thread.
  HandlerPool(size_t threads, size_t max_queued);
  ~HandlerPool();  // Stop()
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  // Queues `job`; false (and `job` dropped) when the queue is full or the pool stopped.
  bool TrySubmit(std::function<void()> job);

  // Runs what is queued, then joins. Idempotent.
  void Stop();

  size_t queued() const;

 private:
  void Work();

  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable has_job_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace kmt::http
