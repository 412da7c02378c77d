// base/metrics.h — a small Prometheus registry with the text exposition
// format (version 0.0.4), enough for /metrics.
//
// Families are counters, gauges or histograms with a fixed list of label
// names; a series is picked by its label values and lives as long as the
// registry (handles stay valid). Render() writes what client_golang writes:
// families sorted by name, each with "# HELP" and "# TYPE", series sorted by
// label values, histogram buckets cumulative with an "le" label last and
// "+Inf", numbers formatted like Go's strconv.FormatFloat(v, 'g', -1, 64).
// Families with no series are omitted. Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kmt::base {

class Counter {
 public:
  void Inc(double v = 1);  // v must be >= 0
  double Value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v); }
  void Add(double v);
  double Value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(const std::vector<double>* bounds) : bounds_(bounds) {
    counts_.assign(bounds->size(), 0);
  }
  void Observe(double v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // one per bound
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double>* bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

enum class MetricType { kCounter, kGauge, kHistogram };

// One metric name with its label names and series.
template <typename T>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> bounds = {})
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        bounds_(std::move(bounds)) {}

  // The series with these label values (one per label name), created at 0.
  // Throws std::invalid_argument when the count does not match.
  T& WithLabels(const std::vector<std::string>& values);

  const std::string& name() const { return name_; }

 private:
  friend class Registry;
  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;  // histograms only
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> series_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class Registry {
 public:
  // Registering a name twice throws std::invalid_argument. Histogram bounds
  // must be strictly increasing (checked, std::invalid_argument).
  CounterFamily& AddCounter(const std::string& name, const std::string& help,
                            std::vector<std::string> label_names = {});
  GaugeFamily& AddGauge(const std::string& name, const std::string& help,
                        std::vector<std::string> label_names = {});
  HistogramFamily& AddHistogram(const std::string& name, const std::string& help,
                                std::vector<std::string> label_names, std::vector<double> bounds);

  // The whole registry in the text format; Content-Type
  // "text/plain; version=0.0.4; charset=utf-8".
  std::string Render() const;

 private:
  void Claim(const std::string& name);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<CounterFamily>> counters_;
  std::map<std::string, std::unique_ptr<GaugeFamily>> gauges_;
  std::map<std::string, std::unique_ptr<HistogramFamily>> histograms_;
};

// Go's strconv.FormatFloat(v, 'g', -1, 64), plus "+Inf", "-Inf", "NaN".
std::string FormatPromFloat(double v);

// prometheus.ExponentialBuckets(start, factor, count).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

}  // namespace kmt::base
