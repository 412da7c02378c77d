// bench/httplib_worker_pool.h — a bench-only copy of webhook/worker_pool.h as of commit
// 5b1863e, the connection workers of the httplib admission server that http/server.h replaced
// (bench/httplib_admission_server.h); kept so the webhook benchmark can show before and
// after in one run. Unchanged but for the names.
//
// The admission server's connection workers: a fixed number of threads and a bounded queue
// of accepted connections (httplib's own ThreadPool queues without limit).
//
// When the queue is full, enqueue() blocks the accepting thread, so further connections
// wait in the kernel's listen backlog instead of in memory; each queued connection is held
// for at most the server's read timeout, so the wait is bounded.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kmt::bench {

class HttplibWorkerPool : public httplib::TaskQueue {
 public:
  // `threads` >= 1 workers; at most `max_queued` >= 1 jobs wait for one.
  HttplibWorkerPool(size_t threads, size_t max_queued);
  ~HttplibWorkerPool() override;
  HttplibWorkerPool(const HttplibWorkerPool&) = delete;
  HttplibWorkerPool& operator=(const HttplibWorkerPool&) = delete;

  // Queues `fn`; blocks while `max_queued` jobs are already waiting. After shutdown()
  // began, runs `fn` on the caller's thread (the server has stopped, so it only closes
  // the connection).
  void enqueue(std::function<void()> fn) override;

  // Lets the workers finish every queued job, then joins them. Idempotent.
  void shutdown() override;

  // Jobs waiting for a worker (not counting those running).
  size_t queued() const;
  // Callers of enqueue() currently blocked on a full queue.
  size_t blocked_producers() const;

 private:
  void Work();

  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable has_job_;
  std::condition_variable has_room_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool shutting_down_ = false;              // guarded by mu_
  size_t blocked_producers_ = 0;            // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace kmt::bench
