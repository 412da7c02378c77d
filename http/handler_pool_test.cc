#include "http/handler_pool.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "base/poll.h"

namespace kmt::http {
namespace {

TEST_CASE("HandlerPool runs jobs on its threads and refuses beyond its queue") {
  HandlerPool pool(1, 2);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> ran{0};
  std::promise<void> started;
  REQUIRE(pool.TrySubmit([&] {
    started.set_value();
    gate.wait();
    ++ran;
  }));
  started.get_future().wait();  // the only thread is busy now
  CHECK(pool.TrySubmit([&] { ++ran; }));
  CHECK(pool.TrySubmit([&] { ++ran; }));
  CHECK(pool.queued() == 2);
  CHECK_FALSE(pool.TrySubmit([&] { ++ran; }));  // full: refused, never blocks
  release.set_value();
  pool.Stop();  // runs what was queued
  CHECK(ran == 3);
  CHECK_FALSE(pool.TrySubmit([&] { ++ran; }));  // stopped
  pool.Stop();                                  // idempotent
}

TEST_CASE("HandlerPool runs jobs concurrently on several threads") {
  HandlerPool pool(4, 16);
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  const auto job = [&] {
    int now = ++inside;
    int seen = max_inside.load();
    while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
    }
    // Up to 20 ms for another job to come in beside this one.
    base::PollUntil(base::SystemClock(), std::chrono::milliseconds(20),
                    std::chrono::milliseconds(1), [&] { return max_inside.load() > 1; });
    --inside;
  };
  for (int i = 0; i < 8; ++i) REQUIRE(pool.TrySubmit(job));
  pool.Stop();
  CHECK(max_inside.load() > 1);
}

}  // namespace
}  // namespace kmt::http
