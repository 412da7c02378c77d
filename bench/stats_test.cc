#include "bench/stats.h"

#include <catch2/catch.hpp>
#include <numeric>

namespace kmt::bench {
namespace {

TEST_CASE("Percentile is nearest-rank") {
  std::vector<double> hundred(100);
  std::iota(hundred.begin(), hundred.end(), 1.0);  // 1..100
  auto [q, want] = GENERATE(
      table<double, double>({{0.50, 50}, {0.99, 99}, {1.0, 100}, {0.001, 1}, {0.995, 100}}));
  CAPTURE(q);
  CHECK(Percentile(hundred, q) == want);
}

TEST_CASE("Percentile of few or no samples") {
  CHECK(Percentile({}, 0.5) == 0);
  CHECK(Percentile({7}, 0.99) == 7);
  CHECK(Percentile({3, 1, 2}, 0.5) == 2);  // unsorted input
  CHECK(Percentile({3, 1, 2}, 0.99) == 3);
}

TEST_CASE("Summarize reports count, p50, p99, max and mean") {
  std::vector<double> v(1000, 1.0);
  v[10] = 50.0;  // one outlier: above p99's rank? no, 1 of 1000 is within the top 1%
  v[20] = 9.0;
  Summary s = Summarize(v);
  CHECK(s.count == 1000);
  CHECK(s.p50 == 1.0);
  CHECK(s.p99 == 1.0);
  CHECK(s.max == 50.0);
  CHECK(s.mean == Approx((998.0 + 50.0 + 9.0) / 1000.0));

  Summary empty = Summarize({});
  CHECK(empty.count == 0);
  CHECK(empty.max == 0);
}

TEST_CASE("Ratio guards a zero floor") {
  CHECK(Ratio(3, 2) == 1.5);
  CHECK(Ratio(3, 0) == 0);
}

}  // namespace
}  // namespace kmt::bench
