#include "http/handler_pool.h"

#include <utility>

namespace kmt::http {

HandlerPool::HandlerPool(size_t threads, size_t max_queued)
    : max_queued_(max_queued == 0 ? 1 : max_queued) {
  if (threads == 0) threads = 1;
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

HandlerPool::~HandlerPool() { Stop(); }

bool HandlerPool::TrySubmit(std::function<void()> job) {
  {
    std::scoped_lock lock(mu_);
    if (stopping_ || jobs_.size() >= max_queued_) return false;
    jobs_.push_back(std::move(job));
  }
  has_job_.notify_one();
  return true;
}

void HandlerPool::Work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      has_job_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping and drained
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

void HandlerPool::Stop() {
  {
    std::scoped_lock lock(mu_);
    stopping_ = true;
  }
  has_job_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

size_t HandlerPool::queued() const {
  std::scoped_lock lock(mu_);
  return jobs_.size();
}

}  // namespace kmt::http
