#include "bench/httplib_worker_pool.h"

#include <algorithm>
#include <utility>

namespace kmt::bench {

HttplibWorkerPool::HttplibWorkerPool(size_t threads, size_t max_queued)
    : max_queued_(std::max<size_t>(max_queued, 1)) {
  threads = std::max<size_t>(threads, 1);
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

HttplibWorkerPool::~HttplibWorkerPool() { shutdown(); }

void HttplibWorkerPool::enqueue(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  auto room = [this] { return shutting_down_ || jobs_.size() < max_queued_; };
  if (!room()) {
    ++blocked_producers_;
    has_room_.wait(lock, room);
    --blocked_producers_;
  }
  if (shutting_down_) {
    lock.unlock();
    fn();
    return;
  }
  jobs_.push_back(std::move(fn));
  lock.unlock();
  has_job_.notify_one();
}

void HttplibWorkerPool::shutdown() {
  {
    std::scoped_lock lock(mu_);
    if (shutting_down_ && threads_.empty()) return;
    shutting_down_ = true;
  }
  has_job_.notify_all();
  has_room_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  std::scoped_lock lock(mu_);
  threads_.clear();
}

size_t HttplibWorkerPool::queued() const {
  std::scoped_lock lock(mu_);
  return jobs_.size();
}

size_t HttplibWorkerPool::blocked_producers() const {
  std::scoped_lock lock(mu_);
  return blocked_producers_;
}

void HttplibWorkerPool::Work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      has_job_.wait(lock, [this] { return shutting_down_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // shutting down and drained
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    has_room_.notify_one();
    job();
  }
}

}  // namespace kmt::bench
