// controller/clock.cc — RealClock on Boost.Asio, and Kubernetes timestamps.
#include "controller/clock.h"

#include <fmt/format.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cctype>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

namespace kmt::controller {

namespace asio = boost::asio;

struct RealClock::Impl {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  std::mutex mu;
  TimerId next_id = 1;
  // A timer is pending while its id is in this map; whoever erases it (the
  // firing handler or Cancel) decides whether the callback runs.
  std::map<TimerId, std::shared_ptr<asio::steady_timer>> pending;
  std::thread thread;
};

RealClock::RealClock() : impl_(std::make_unique<Impl>()) {
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

RealClock::~RealClock() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->pending.clear();
  }
  impl_->guard.reset();
  impl_->io.stop();
  impl_->thread.join();
}

SteadyTime RealClock::Now() const { return std::chrono::steady_clock::now(); }

WallTime RealClock::WallNow() const { return std::chrono::system_clock::now(); }

TimerId RealClock::RunAfter(Duration delay, std::function<void()> fn) {
  auto timer = std::make_shared<asio::steady_timer>(impl_->io);
  timer->expires_after(delay < Duration::zero() ? Duration::zero() : delay);
  TimerId id;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    id = impl_->next_id++;
    impl_->pending.emplace(id, timer);
  }
  timer->async_wait([impl = impl_.get(), id, fn = std::move(fn)](const boost::system::error_code&) {
    {
      std::lock_guard<std::mutex> lock(impl->mu);
      if (impl->pending.erase(id) == 0) return;  // cancelled
    }
    fn();
  });
  return id;
}

bool RealClock::Cancel(TimerId id) {
  std::shared_ptr<asio::steady_timer> timer;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
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

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool Digits(const std::string& s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
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

bool ParseRfc3339(const std::string& s, WallTime* out) {
  int y, mo, d, h, mi, se;
  if (!Digits(s, 0, 4, &y) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, &mo) ||
      s[7] != '-' || !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' ||
      !Digits(s, 17, 2, &se)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return false;
  size_t pos = 19;
  int64_t micros = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    int64_t scale = 100000;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      micros += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return false;
  }
  int64_t offset_secs = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om)) {
      return false;
    }
    offset_secs = (int64_t{oh} * 3600 + int64_t{om} * 60) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return false;
  }
  if (pos != s.size()) return false;
  int64_t secs = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
                 int64_t{h} * 3600 + int64_t{mi} * 60 + se - offset_secs;
  *out = WallTime(std::chrono::duration_cast<WallTime::duration>(
      std::chrono::seconds(secs) + std::chrono::microseconds(micros)));
  return true;
}

}  // namespace kmt::controller
