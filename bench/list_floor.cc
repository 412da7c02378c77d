#include "bench/list_floor.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/poll.h"
#include "kube/error.h"
#include "kube/paths.h"
#include "kube/transport.h"

namespace kmt::bench {

namespace {

// A SAX handler that builds nothing: it counts the items of the root's "items" array and
// keeps the root's metadata.continue.
class DiscardingSax {
 public:
  using json = nlohmann::json;
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t&) { return true; }
  bool string(json::string_t& s) {
    if (depth_ == 2 && root_key_ == "metadata" && key_ == "continue") page_.continue_token = s;
    return true;
  }
  bool binary(json::binary_t&) { return true; }
  bool start_object(std::size_t) {
    if (depth_ == 2 && root_key_ == "items") ++page_.items;
    ++depth_;
    return true;
  }
  bool key(json::string_t& k) {
    if (depth_ == 1) root_key_ = k;
    if (depth_ == 2) key_ = k;
    return true;
  }
  bool end_object() {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) {
    ++depth_;
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }
  PageSummary page() && { return std::move(page_); }

 private:
  int depth_ = 0;
  std::string root_key_;  // the root object's current key
  std::string key_;       // the current key one level down
  PageSummary page_;
};

double ThreadCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

std::optional<PageSummary> ParseListPageDiscarding(std::string_view body) {
  DiscardingSax sax;
  if (!nlohmann::json::sax_parse(body.begin(), body.end(), &sax)) return std::nullopt;
  return std::move(sax).page();
}

ListFloor MeasureListFloor(const kube::ClientConfig& config, const std::vector<ListQuery>& queries,
                           int64_t page_size) {
  kube::TransportOptions to;
  to.qps = 0;
  to.user_agent = "kmt-bench-floor";
  to.max_connections = std::max<size_t>(queries.size(), 1);
  kube::Transport transport(config, to);
  std::mutex mu;
  ListFloor floor;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  const base::Stopwatch elapsed;
  threads.reserve(queries.size());
  for (const ListQuery& q : queries) {
    threads.emplace_back([&, q] {
      const double cpu0 = ThreadCpuSeconds();
      ListFloor mine;
      try {
        std::string token;
        do {
          std::string query = fmt::format("?limit={}", page_size);
          if (!q.label_selector.empty()) {
            query += "&labelSelector=" + kube::EscapeQueryValue(q.label_selector);
          }
          if (!token.empty()) query += "&continue=" + kube::EscapeQueryValue(token);
          const std::string what = kube::DescribeCall("list", q.resource, "");
          kube::HttpResponse r =
              transport.Do("GET", kube::ResourcePath(q.resource, "") + query, "", "", what);
          if (r.status != 200) {
            throw kube::KubeError(kube::ErrorKind::kInternal,
                                  fmt::format("{}: HTTP {}", what, r.status));
          }
          const double parse0 = ThreadCpuSeconds();
          std::optional<PageSummary> page = ParseListPageDiscarding(r.body);
          mine.parse_cpu_seconds += ThreadCpuSeconds() - parse0;
          if (!page) {
            throw kube::KubeError(kube::ErrorKind::kInternal, what + ": the answer is not JSON");
          }
          ++mine.requests;
          mine.bytes += r.body.size();
          mine.items += page->items;
          token = std::move(page->continue_token);
        } while (!token.empty());
      } catch (...) {
        std::scoped_lock lock(mu);
        if (!failure) failure = std::current_exception();
      }
      mine.cpu_seconds = ThreadCpuSeconds() - cpu0;
      std::scoped_lock lock(mu);
      floor.cpu_seconds += mine.cpu_seconds;
      floor.bytes += mine.bytes;
      floor.requests += mine.requests;
      floor.items += mine.items;
      floor.parse_cpu_seconds += mine.parse_cpu_seconds;
    });
  }
  for (std::thread& t : threads) t.join();
  floor.seconds = elapsed.ElapsedSeconds();
  if (failure) std::rethrow_exception(failure);
  return floor;
}

}  // namespace kmt::bench
