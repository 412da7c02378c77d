#include "bench/load_generator.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

namespace kmt::bench {

using Clock = std::chrono::steady_clock;

std::chrono::nanoseconds DueOffset(uint64_t k, double rate) {
  return std::chrono::nanoseconds(
      static_cast<int64_t>(std::llround(static_cast<double>(k) * 1e9 / rate)));
}

uint64_t RequestCount(double rate, std::chrono::milliseconds duration) {
  return static_cast<uint64_t>(
      std::ceil(rate * static_cast<double>(duration.count()) / 1000.0 - 1e-9));
}

LoadResult RunOpenLoop(const LoadOptions& o, const std::function<LoadRequest(uint64_t)>& make,
                       const std::function<bool(const std::string&)>& ok) {
  const uint64_t total = RequestCount(o.rate, o.duration);
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  LoadResult result;
  result.service_seconds.reserve(total);
  result.response_seconds.reserve(total);
  Clock::time_point last_answer;
  // Connect every client before the clock starts, so the first requests do not pay for
  // handshakes the steady state does not have.
  std::vector<std::unique_ptr<httplib::SSLClient>> clients;
  for (int c = 0; c < o.connections; ++c) {
    auto cli = o.client_cert_file.empty()
                   ? std::make_unique<httplib::SSLClient>(o.host, o.port)
                   : std::make_unique<httplib::SSLClient>(o.host, o.port, o.client_cert_file,
                                                          o.client_key_file);
    cli->set_ca_cert_path(o.ca_file.c_str());
    cli->enable_server_certificate_verification(true);
    cli->set_keep_alive(true);
    cli->set_tcp_nodelay(true);  // else Nagle + delayed ACK add 40 ms to every request
    cli->set_connection_timeout(5, 0);
    cli->set_read_timeout(10, 0);
    cli->Get("/healthz");
    clients.push_back(std::move(cli));
  }
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(20);
  // Bounded time: requests still waiting for a connection this long after the run should
  // have ended are dropped (counted as errors), not sent.
  const Clock::time_point give_up =
      start + o.duration + std::max<Clock::duration>(o.duration, std::chrono::seconds(2));
  auto worker = [&](httplib::SSLClient& cli) {
    std::vector<double> service, response;
    uint64_t errors = 0;
    std::string first_error;
    for (;;) {
      const uint64_t k = next.fetch_add(1);
      if (k >= total) break;
      const Clock::time_point due = start + DueOffset(k, o.rate);
      if (Clock::now() > give_up) {
        ++errors;
        if (first_error.empty()) first_error = "dropped: the run fell too far behind its schedule";
        continue;
      }
      LoadRequest req = make(k);
      std::this_thread::sleep_until(due);
      const Clock::time_point sent = Clock::now();
      auto res = cli.Post(req.path.c_str(), req.body, "application/json");
      const Clock::time_point done = Clock::now();
      if (!res) {
        ++errors;
        if (first_error.empty()) first_error = "transport: " + httplib::to_string(res.error());
        continue;
      }
      if (res->status != o.ok_status || !ok(res->body)) {
        ++errors;
        if (first_error.empty()) {
          first_error = "HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 300);
        }
        continue;
      }
      service.push_back(std::chrono::duration<double>(done - sent).count());
      response.push_back(std::chrono::duration<double>(done - due).count());
    }
    std::scoped_lock lock(mu);
    result.service_seconds.insert(result.service_seconds.end(), service.begin(), service.end());
    result.response_seconds.insert(result.response_seconds.end(), response.begin(), response.end());
    result.errors += errors;
    if (result.first_error.empty()) result.first_error = first_error;
    last_answer = std::max(last_answer, Clock::now());
  };
  std::vector<std::thread> threads;
  threads.reserve(clients.size());
  for (auto& cli : clients) threads.emplace_back(worker, std::ref(*cli));
  for (auto& t : threads) t.join();
  result.sent = total;
  result.elapsed_seconds = std::chrono::duration<double>(last_answer - start).count();
  return result;
}

}  // namespace kmt::bench
