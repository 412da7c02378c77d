#include "webhook/worker_pool.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace kmt::webhook {
namespace {

TEST_CASE("WorkerPool runs every job and drains the queue on shutdown") {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(3, 100);
    for (int i = 0; i < 50; ++i) pool.enqueue([&ran] { ++ran; });
    pool.shutdown();
    CHECK(ran == 50);
    pool.shutdown();  // idempotent
  }
  CHECK(ran == 50);
}

TEST_CASE("WorkerPool never runs more jobs at once than it has threads") {
  WorkerPool pool(2, 10);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::promise<void> two_started;
  std::atomic<int> started{0};
  for (int i = 0; i < 6; ++i) {
    pool.enqueue([&, released] {
      int now = ++running;
      int seen = max_running.load();
      while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
      }
      if (++started == 2) two_started.set_value();
      released.wait();
      --running;
    });
  }
  two_started.get_future().wait();
  CHECK(pool.queued() == 4);  // two run, four wait
  release.set_value();
  pool.shutdown();
  CHECK(max_running == 2);
}

TEST_CASE("WorkerPool blocks the producer while the queue is full") {
  WorkerPool pool(1, 1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> first_running;
  pool.enqueue([&first_running, released] {
    first_running.set_value();
    released.wait();
  });
  first_running.get_future().wait();
  pool.enqueue([] {});  // fills the queue (one waiting)
  REQUIRE(pool.queued() == 1);

  std::atomic<bool> third_queued{false};
  std::thread producer([&] {
    pool.enqueue([] {});
    third_queued = true;
  });
  // The producer cannot get past a full queue while the only worker is held.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pool.blocked_producers() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  CHECK(pool.blocked_producers() == 1);
  CHECK_FALSE(third_queued);
  CHECK(pool.queued() == 1);
  release.set_value();
  producer.join();
  CHECK(third_queued);
  pool.shutdown();
  CHECK(pool.queued() == 0);
}

TEST_CASE("WorkerPool runs jobs inline once shut down") {
  WorkerPool pool(1, 1);
  pool.shutdown();
  bool ran = false;
  pool.enqueue([&ran] { ran = true; });
  CHECK(ran);
}

}  // namespace
}  // namespace kmt::webhook
