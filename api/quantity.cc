#include "api/quantity.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace kmt::api {
namespace {

using i128 = __int128;

constexpr int kMaxSignificantDigits = 20;  // 10^20 * 2^60 still fits in 127 bits

bool Fail(std::string* error, const char* why) {
  if (error != nullptr) *error = why;
  return false;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses `text` and returns it times 10^scale, rounded away from zero (as Quantity's
// ScaledValue rounds up).
bool Parse(std::string_view s, int scale, int64_t& out, std::string* error) {
  if (s.empty())
    return Fail(error,
                "quantities must match the regular expression "
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  size_t i = 0;
  bool negative = false;
  if (s[i] == '+' || s[i] == '-') negative = s[i++] == '-';

  // Mantissa: significant digits in `m`, value = m * 10^exp10 (+ a dropped remainder).
  i128 m = 0;
  int significant = 0;
  int exp10 = 0;
  bool dropped_nonzero = false;
  bool any_digit = false;
  for (; i < s.size() && IsDigit(s[i]); ++i) {
    any_digit = true;
    if (m == 0 && s[i] == '0') continue;
    if (significant < kMaxSignificantDigits) {
      m = m * 10 + (s[i] - '0');
      ++significant;
    } else {
      ++exp10;  // integer digit beyond precision: the number is just larger
      dropped_nonzero = dropped_nonzero || s[i] != '0';
    }
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    for (; i < s.size() && IsDigit(s[i]); ++i) {
      any_digit = true;
      if (m == 0 && s[i] == '0') {
        --exp10;
        continue;
      }
      if (significant < kMaxSignificantDigits) {
        m = m * 10 + (s[i] - '0');
        ++significant;
        --exp10;
      } else {
        dropped_nonzero = dropped_nonzero || s[i] != '0';
      }
    }
  }
  if (!any_digit) return Fail(error, "quantity has no digits");

  // Suffix.
  const std::string_view suffix = s.substr(i);
  int exp2 = 0;
  if (suffix.empty()) {
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    switch (suffix[0]) {
      case 'K':
        exp2 = 10;
        break;
      case 'M':
        exp2 = 20;
        break;
      case 'G':
        exp2 = 30;
        break;
      case 'T':
        exp2 = 40;
        break;
      case 'P':
        exp2 = 50;
        break;
      case 'E':
        exp2 = 60;
        break;
      default:
        return Fail(error, "unknown quantity suffix");
    }
  } else if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'n':
        exp10 -= 9;
        break;
      case 'u':
        exp10 -= 6;
        break;
      case 'm':
        exp10 -= 3;
        break;
      case 'k':
        exp10 += 3;
        break;
      case 'M':
        exp10 += 6;
        break;
      case 'G':
        exp10 += 9;
        break;
      case 'T':
        exp10 += 12;
        break;
      case 'P':
        exp10 += 15;
        break;
      case 'E':
        exp10 += 18;
        break;
      default:
        return Fail(error, "unknown quantity suffix");
    }
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    size_t k = 1;
    bool neg_exp = false;
    if (k < suffix.size() && (suffix[k] == '+' || suffix[k] == '-')) neg_exp = suffix[k++] == '-';
    if (k == suffix.size()) return Fail(error, "unknown quantity suffix");
    int e = 0;
    for (; k < suffix.size(); ++k) {
      if (!IsDigit(suffix[k])) return Fail(error, "unknown quantity suffix");
      e = e * 10 + (suffix[k] - '0');
      if (e > 1000) return Fail(error, "quantity exponent out of range");
    }
    exp10 += neg_exp ? -e : e;
  } else {
    return Fail(error, "unknown quantity suffix");
  }
  exp10 += scale;

  // value = m * 2^exp2 * 10^exp10, rounded away from zero.
  constexpr i128 kMax = std::numeric_limits<int64_t>::max();
  if (m == 0) {
    out = 0;
    return true;
  }
  i128 v = m << exp2;  // < 2^127 by kMaxSignificantDigits
  bool remainder = dropped_nonzero;
  if (exp10 >= 0) {
    for (int k = 0; k < exp10; ++k) {
      if (v > kMax) break;
      v *= 10;
    }
  } else if (exp10 < -38) {
    v = 0;
    remainder = true;
  } else {
    i128 div = 1;
    for (int k = 0; k < -exp10; ++k) div *= 10;
    remainder = remainder || (v % div) != 0;
    v /= div;
  }
  if (remainder) v += 1;
  if (v > kMax) return Fail(error, "quantity is too large");
  out = static_cast<int64_t>(negative ? -v : v);
  return true;
}

}  // namespace

std::optional<int64_t> ParseQuantityMilli(std::string_view text, std::string* error) {
  int64_t v = 0;
  if (!Parse(text, 3, v, error)) return std::nullopt;
  return v;
}

std::optional<int64_t> ParseQuantityValue(std::string_view text, std::string* error) {
  int64_t v = 0;
  if (!Parse(text, 0, v, error)) return std::nullopt;
  return v;
}

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  const bool negative = bytes < 0;
  const uint64_t b = negative ? 0 - static_cast<uint64_t>(bytes) : static_cast<uint64_t>(bytes);
  std::string sign = negative ? "-" : "";
  for (int u = 5; u >= 0; --u) {
    const uint64_t unit = uint64_t{1} << (10 * (u + 1));
    if (b >= unit && b % unit == 0) return sign + std::to_string(b / unit) + kUnits[u];
  }
  for (int u = 5; u >= 0; --u) {
    const uint64_t unit = uint64_t{1} << (10 * (u + 1));
    if (b >= unit) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f%s", static_cast<double>(b) / static_cast<double>(unit),
                    kUnits[u]);
      return sign + buf;
    }
  }
  return sign + std::to_string(b);
}

std::string FormatMilli(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return std::to_string(milli) + "m";
}

}  // namespace kmt::api
