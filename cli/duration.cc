#include "cli/duration.h"

#include <cmath>
#include <string>

namespace kmt::cli {
namespace {

// Nanoseconds per unit.
std::optional<double> UnitNanos(std::string_view unit) {
  if (unit == "ns") return 1.0;
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  if (unit == "m") return 60e9;
  if (unit == "h") return 3600e9;
  return std::nullopt;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::chrono::milliseconds> {
    if (error) *error = "invalid duration \"" + std::string(text) + "\": " + why;
    return std::nullopt;
  };
  if (text.empty()) return fail("empty");
  if (text == "0") return std::chrono::milliseconds(0);
  if (text[0] == '-') return fail("must not be negative");
  if (text[0] == '+') text.remove_prefix(1);
  double total_ns = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    size_t int_end = i;
    size_t frac_digits = 0;
    if (i < text.size() && text[i] == '.') {
      ++i;
      while (i < text.size() && IsDigit(text[i])) {
        ++i;
        ++frac_digits;
      }
    }
    if (int_end == start && frac_digits == 0) return fail("expected a number");
    double value = std::stod(std::string(text.substr(start, i - start)));
    size_t unit_start = i;
    while (i < text.size() && !IsDigit(text[i]) && text[i] != '.') ++i;
    if (unit_start == i) return fail("missing unit (one of ns, us, ms, s, m, h)");
    auto nanos = UnitNanos(text.substr(unit_start, i - unit_start));
    if (!nanos) {
      return fail("unknown unit \"" + std::string(text.substr(unit_start, i - unit_start)) + "\"");
    }
    total_ns += value * *nanos;
    if (total_ns > 9.2e18) return fail("too large");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total_ns / 1e6)));
}

std::string FormatDuration(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms < 1000) return std::to_string(ms) + "ms";
  int64_t s = ms / 1000;
  std::string out;
  if (s >= 3600) out += std::to_string(s / 3600) + "h";
  if (s >= 60) out += std::to_string((s % 3600) / 60) + "m";
  out += std::to_string(s % 60) + "s";
  return out;
}

std::string HumanAge(std::chrono::nanoseconds age) {
  using std::chrono::duration_cast;
  const auto seconds = duration_cast<std::chrono::seconds>(age).count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";  // a clock a second apart counts as now
  auto with = [](long long big, const char* big_unit, long long small, const char* small_unit) {
    std::string s = std::to_string(big) + big_unit;
    if (small != 0) s += std::to_string(small) + small_unit;
    return s;
  };
  if (seconds < 120) return std::to_string(seconds) + "s";
  const long long minutes = seconds / 60;
  if (minutes < 10) return with(minutes, "m", seconds % 60, "s");
  if (minutes < 180) return std::to_string(minutes) + "m";
  const long long hours = minutes / 60;
  if (hours < 8) return with(hours, "h", minutes % 60, "m");
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) return with(hours / 24, "d", hours % 24, "h");
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) return with(hours / 24 / 365, "y", (hours / 24) % 365, "d");
  return std::to_string(hours / 24 / 365) + "y";
}

}  // namespace kmt::cli
