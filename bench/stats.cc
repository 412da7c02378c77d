#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kmt::bench {

namespace {
// Index of the nearest-rank q-percentile in a sorted vector of n > 0 samples.
size_t Rank(size_t n, double q) {
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  return std::clamp<size_t>(rank, 1, n) - 1;
}
}  // namespace

double Percentile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::ranges::sort(samples);
  return samples[Rank(samples.size(), q)];
}

Summary Summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::ranges::sort(samples);
  s.count = samples.size();
  s.p50 = samples[Rank(s.count, 0.50)];
  s.p99 = samples[Rank(s.count, 0.99)];
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.count);
  return s;
}

double Ratio(double figure, double floor) { return floor == 0 ? 0 : figure / floor; }

}  // namespace kmt::bench
