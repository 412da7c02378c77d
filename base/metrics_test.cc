// base/metrics_test.cc — the exact text exposition format.
#include "base/metrics.h"

#include <catch2/catch.hpp>
#include <stdexcept>

namespace kmt::base {
namespace {

TEST_CASE("Floats are formatted like Go's strconv 'g' shortest") {
  auto [v, text] = GENERATE(table<double, std::string>({
      {0, "0"},
      {1, "1"},
      {-2, "-2"},
      {0.5, "0.5"},
      {0.005, "0.005"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {1e-08, "1e-08"},
      {10e-9, "1e-08"},
      {123456, "123456"},
      {999999, "999999"},
      {1000000, "1e+06"},
      {1234567, "1.234567e+06"},
      {24576000, "2.4576e+07"},
      {1000, "1000"},
      {1.25, "1.25"},
      {0.1 + 0.2, "0.30000000000000004"},
      {1e21, "1e+21"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::numeric_limits<double>::quiet_NaN(), "NaN"},
  }));
  CAPTURE(v);
  REQUIRE(FormatPromFloat(v) == text);
}

TEST_CASE("Render writes families by name, series by label values, escaped") {
  Registry r;
  auto& requests = r.AddCounter("b_requests_total", "Requests.\nSecond \\ line", {"code", "path"});
  auto& temp = r.AddGauge("a_temperature", "Temperature");
  r.AddCounter("c_unused_total", "Never used", {"x"});
  requests.WithLabels({"500", "/b"}).Inc();
  requests.WithLabels({"200", "/a\"q\"\n\\"}).Inc(2.5);
  requests.WithLabels({"200", "/a\"q\"\n\\"}).Inc();
  temp.WithLabels({}).Set(-3.5);
  REQUIRE(r.Render() ==
          "# HELP a_temperature Temperature\n"
          "# TYPE a_temperature gauge\n"
          "a_temperature -3.5\n"
          "# HELP b_requests_total Requests.\\nSecond \\\\ line\n"
          "# TYPE b_requests_total counter\n"
          "b_requests_total{code=\"200\",path=\"/a\\\"q\\\"\\n\\\\\"} 3.5\n"
          "b_requests_total{code=\"500\",path=\"/b\"} 1\n");
}

TEST_CASE("Histograms are cumulative, upper-inclusive, with +Inf, sum and count") {
  Registry r;
  auto& h = r.AddHistogram("latency_seconds", "Latency", {"op"}, {0.1, 1, 10});
  auto& get = h.WithLabels({"get"});
  for (double v : {0.05, 0.1, 0.5, 1.0, 20.0}) get.Observe(v);
  REQUIRE(r.Render() ==
          "# HELP latency_seconds Latency\n"
          "# TYPE latency_seconds histogram\n"
          "latency_seconds_bucket{op=\"get\",le=\"0.1\"} 2\n"
          "latency_seconds_bucket{op=\"get\",le=\"1\"} 4\n"
          "latency_seconds_bucket{op=\"get\",le=\"10\"} 4\n"
          "latency_seconds_bucket{op=\"get\",le=\"+Inf\"} 5\n"
          "latency_seconds_sum{op=\"get\"} 21.65\n"
          "latency_seconds_count{op=\"get\"} 5\n");
}

TEST_CASE("Histogram without labels puts le alone") {
  Registry r;
  r.AddHistogram("h", "H", {}, {1}).WithLabels({}).Observe(2);
  REQUIRE(r.Render() ==
          "# HELP h H\n# TYPE h histogram\nh_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 1\n"
          "h_sum 2\nh_count 1\n");
}

TEST_CASE("Misuse is rejected with a message") {
  Registry r;
  auto& c = r.AddCounter("x_total", "X", {"a"});
  REQUIRE_THROWS_WITH(r.AddGauge("x_total", "again"), "metric registered twice: x_total");
  REQUIRE_THROWS_WITH(c.WithLabels({}), "metric x_total takes 1 label values, got 0");
  REQUIRE_THROWS_WITH(c.WithLabels({"v"}).Inc(-1), "counter cannot decrease");
  REQUIRE_THROWS_WITH(r.AddHistogram("h", "H", {}, {1, 1}),
                      "histogram buckets must be strictly increasing: h");
}

TEST_CASE("ExponentialBuckets matches Prometheus") {
  // Repeated multiplication drifts exactly as in Go: controller-runtime's
  // /metrics shows le="9.999999999999999e-06" too.
  std::string text;
  for (double b : ExponentialBuckets(10e-9, 10, 12)) text += FormatPromFloat(b) + " ";
  REQUIRE(text ==
          "1e-08 1e-07 1e-06 9.999999999999999e-06 9.999999999999999e-05 0.001 0.01 0.1 1 10 "
          "100 1000 ");
}

}  // namespace
}  // namespace kmt::base
