// bench/stats.h — the few statistics every benchmark harness prints: nearest-rank
// percentiles over samples, and the ratio of a figure to the floor measured in the same run
// (the machine's noise cancels in the ratio, not in the absolute figure).
#pragma once

#include <cstddef>
#include <vector>

namespace kmt::bench {

struct Summary {
  size_t count = 0;
  double p50 = 0;
  double p99 = 0;
  double max = 0;
  double mean = 0;
};

// Nearest-rank percentile (the smallest sample with at least q of the samples at or below
// it), q in (0, 1]. 0 for no samples. Sorts a copy.
double Percentile(std::vector<double> samples, double q);

// count, p50, p99, max and mean of the samples; all zero for none.
Summary Summarize(std::vector<double> samples);

// figure / floor; 0 when the floor is 0 (no meaningful ratio).
double Ratio(double figure, double floor);

}  // namespace kmt::bench
