// base/clock.cc — RealClock on Boost.Asio, and Kubernetes timestamps.
#include "base/clock.h"

#include <fmt/format.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

namespace kmt::base {

namespace asio = boost::asio;

struct RealClock::Impl {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  std::mutex mu;
  TimerId next_id = 1;
  // A timer is pending while its id is in this map; whoever erases it (the
  // firing handler or Cancel) decides whether the callback runs.
  std::map<TimerId, std::shared_ptr<asio::steady_timer>> pending;
  std::once_flag started;  // the thread starts with the first timer
  std::thread thread;
};

RealClock::RealClock() : impl_(std::make_unique<Impl>()) {}

RealClock::~RealClock() {
  {
    std::scoped_lock lock(impl_->mu);
    impl_->pending.clear();
  }
  impl_->guard.reset();
  impl_->io.stop();
  // The flag also orders this read after a thread start on another thread.
  std::call_once(impl_->started, [] {});
  if (impl_->thread.joinable()) impl_->thread.join();
}

SteadyTime RealClock::Now() const { return std::chrono::steady_clock::now(); }

WallTime RealClock::WallNow() const { return std::chrono::system_clock::now(); }

TimerId RealClock::RunAfter(Duration delay, std::function<void()> fn) {
  std::call_once(impl_->started,
                 [impl = impl_.get()] { impl->thread = std::thread([impl] { impl->io.run(); }); });
  auto timer = std::make_shared<asio::steady_timer>(impl_->io);
  timer->expires_after(delay < Duration::zero() ? Duration::zero() : delay);
  TimerId id;
  {
    std::scoped_lock lock(impl_->mu);
    id = impl_->next_id++;
    impl_->pending.emplace(id, timer);
  }
  timer->async_wait([impl = impl_.get(), id, fn = std::move(fn)](const boost::system::error_code&) {
    {
      std::scoped_lock lock(impl->mu);
      if (impl->pending.erase(id) == 0) return;  // cancelled
    }
    fn();
  });
  return id;
}

bool RealClock::Cancel(TimerId id) {
  std::shared_ptr<asio::steady_timer> timer;
  {
    std::scoped_lock lock(impl_->mu);
    auto it = impl_->pending.find(id);
    if (it == impl_->pending.end()) return false;
    timer = std::move(it->second);
    impl_->pending.erase(it);
  }
  // Timers are not thread-safe objects: cancel on the io thread. The handler
  // would skip the callback anyway; cancelling just frees it early.
  asio::post(impl_->io, [timer] { timer->cancel(); });
  return true;
}

void RealClock::Sleep(Duration d) {
  if (d > Duration::zero()) std::this_thread::sleep_for(d);
}

bool RealClock::WaitFor(Duration d, std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                        const std::function<bool()>& done) {
  return cv.wait_for(lock, d, done);
}

Clock& SystemClock() {
  static auto* clock = new RealClock();  // never destroyed: used until exit
  return *clock;
}

namespace {

std::tm UtcTm(WallTime t, int64_t* micros) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  int64_t secs = us / 1000000;
  int64_t rem = us % 1000000;
  if (rem < 0) {
    rem += 1000000;
    --secs;
  }
  *micros = rem;
  auto tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return tm;
}

}  // namespace

std::string FormatRfc3339(WallTime t) {
  int64_t micros;
  std::tm tm = UtcTm(t, &micros);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string FormatMicroTime(WallTime t) {
  int64_t micros;
  std::tm tm = UtcTm(t, &micros);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
}

}  // namespace kmt::base
