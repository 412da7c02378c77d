// base/metrics.cc
#include "base/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace kmt::base {

void Counter::Inc(double v) {
  if (v < 0) throw std::invalid_argument("counter cannot decrease");
  value_.fetch_add(v);
}

void Gauge::Add(double v) { value_.fetch_add(v); }

void Histogram::Observe(double v) {
  std::scoped_lock lock(mu_);
  // Buckets are upper-inclusive (le); values above the last bound only count in +Inf.
  auto it = std::ranges::lower_bound(*bounds_, v);
  if (it != bounds_->end()) ++counts_[static_cast<size_t>(it - bounds_->begin())];
  ++count_;
  sum_ += v;
}

Histogram::Snapshot Histogram::Read() const {
  std::scoped_lock lock(mu_);
  Snapshot s;
  s.count = count_;
  s.sum = sum_;
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  return s;
}

template <typename T>
T& Family<T>::WithLabels(const std::vector<std::string>& values) {
  if (values.size() != label_names_.size()) {
    throw std::invalid_argument(fmt::format("metric {} takes {} label values, got {}", name_,
                                            label_names_.size(), values.size()));
  }
  std::scoped_lock lock(mu_);
  auto& slot = series_[values];
  if (!slot) {
    if constexpr (std::is_same_v<T, Histogram>) {
      slot = std::make_unique<T>(&bounds_);
    } else {
      slot = std::make_unique<T>();
    }
  }
  return *slot;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

void Registry::Claim(const std::string& name) {
  if (counters_.count(name) || gauges_.count(name) || histograms_.count(name)) {
    throw std::invalid_argument("metric registered twice: " + name);
  }
}

CounterFamily& Registry::AddCounter(const std::string& name, const std::string& help,
                                    std::vector<std::string> label_names) {
  std::scoped_lock lock(mu_);
  Claim(name);
  auto& f = counters_[name];
  f = std::make_unique<CounterFamily>(name, help, std::move(label_names));
  return *f;
}

GaugeFamily& Registry::AddGauge(const std::string& name, const std::string& help,
                                std::vector<std::string> label_names) {
  std::scoped_lock lock(mu_);
  Claim(name);
  auto& f = gauges_[name];
  f = std::make_unique<GaugeFamily>(name, help, std::move(label_names));
  return *f;
}

HistogramFamily& Registry::AddHistogram(const std::string& name, const std::string& help,
                                        std::vector<std::string> label_names,
                                        std::vector<double> bounds) {
  for (size_t i = 1; i < bounds.size(); ++i) {
    if (!(bounds[i - 1] < bounds[i])) {
      throw std::invalid_argument("histogram buckets must be strictly increasing: " + name);
    }
  }
  std::scoped_lock lock(mu_);
  Claim(name);
  auto& f = histograms_[name];
  f = std::make_unique<HistogramFamily>(name, help, std::move(label_names), std::move(bounds));
  return *f;
}

std::string FormatPromFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  // Shortest round-trip digits, then Go's choice between %e and %f: %e when
  // the decimal exponent is < -4 or >= 6 (strconv's 'g' rule for the shortest
  // precision; hence "2.4576e+07" for resident memory in client_golang output).
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  // to_chars wrote the exponent ("e+07"): from_chars reads its sign and digits.
  int exp = 0;
  const char* exp_at = sci.c_str() + e + 1;
  if (*exp_at == '+') ++exp_at;
  std::from_chars(exp_at, sci.c_str() + sci.size(), exp);
  bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  std::string out = neg ? "-" : "";
  if (exp < -4 || exp >= 6) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02}", exp < 0 ? '-' : '+', std::abs(exp));
    return out;
  }
  if (exp < 0) {
    out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
    out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0');
  } else {
    out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
           digits.substr(static_cast<size_t>(exp) + 1);
  }
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> b;
  for (int i = 0; i < count; ++i) {
    b.push_back(start);
    start *= factor;
  }
  return b;
}

namespace {

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// {a="x",b="y"} plus an optional extra label (le), or "" when there are none.
std::string LabelSet(const std::vector<std::string>& names, const std::vector<std::string>& values,
                     const std::string& extra_name = {}, const std::string& extra_value = {}) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out +=
        fmt::format("{}{}=\"{}\"", out.empty() ? "" : ",", names[i], EscapeLabelValue(values[i]));
  }
  if (!extra_name.empty()) {
    out += fmt::format("{}{}=\"{}\"", out.empty() ? "" : ",", extra_name, extra_value);
  }
  return out.empty() ? out : "{" + out + "}";
}

}  // namespace

std::string Registry::Render() const {
  std::scoped_lock lock(mu_);
  // Merge the three maps in name order.
  std::map<std::string, std::string> blocks;
  auto header = [](const std::string& name, const std::string& help, const char* type) {
    return fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, EscapeHelp(help), name, type);
  };
  auto simple = [&](const auto& families, const char* type) {
    for (const auto& [name, f] : families) {
      std::scoped_lock flock(f->mu_);
      if (f->series_.empty()) continue;
      std::string text = header(name, f->help_, type);
      for (const auto& [values, s] : f->series_) {
        text += fmt::format("{}{} {}\n", name, LabelSet(f->label_names_, values),
                            FormatPromFloat(s->Value()));
      }
      blocks[name] = std::move(text);
    }
  };
  simple(counters_, "counter");
  simple(gauges_, "gauge");
  for (const auto& [name, f] : histograms_) {
    std::scoped_lock flock(f->mu_);
    if (f->series_.empty()) continue;
    std::string text = header(name, f->help_, "histogram");
    for (const auto& [values, h] : f->series_) {
      Histogram::Snapshot s = h->Read();
      for (size_t i = 0; i < f->bounds_.size(); ++i) {
        text += fmt::format("{}_bucket{} {}\n", name,
                            LabelSet(f->label_names_, values, "le", FormatPromFloat(f->bounds_[i])),
                            s.cumulative[i]);
      }
      text += fmt::format("{}_bucket{} {}\n", name, LabelSet(f->label_names_, values, "le", "+Inf"),
                          s.count);
      text += fmt::format("{}_sum{} {}\n", name, LabelSet(f->label_names_, values),
                          FormatPromFloat(s.sum));
      text += fmt::format("{}_count{} {}\n", name, LabelSet(f->label_names_, values), s.count);
    }
    blocks[name] = std::move(text);
  }
  std::string out;
  for (auto& [name, text] : blocks) out += text;
  return out;
}

}  // namespace kmt::base
