// fuzz/quantity/entry.cc — arbitrary bytes as a resource quantity, through the real parsers
// and formatters of api/quantity.h.
//
// Checks:
//   - ParseQuantityMilli / ParseQuantityValue never throw; nullopt comes with a reason, a
//     value without one, and asking for the reason does not change the answer;
//   - both round away from zero from the same number: whenever the milli value fits, the
//     whole value exists and equals the milli value divided by 1000, rounded away from zero;
//   - FormatMilli is exact: it parses back to the same milli value; FormatBytes is exact
//     whenever it prints no decimal point: it parses back to the same byte count.
#include "fuzz/entry.h"

#include <fmt/format.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "api/quantity.h"

namespace kmt::fuzz {
namespace {

int64_t DivAway(int64_t v, int64_t d) {
  const int64_t q = v / d;
  return v % d == 0 ? q : (v < 0 ? q - 1 : q + 1);
}

template <typename ParseFn>
std::string CheckOne(std::string_view text, ParseFn parse, const char* name,
                     std::optional<int64_t>& out) {
  std::string why;
  out = parse(text, &why);
  if (out.has_value() == !why.empty()) {
    return fmt::format("{}(\"{}\"): a value together with a reason, or neither", name, text);
  }
  if (parse(text, nullptr) != out) {
    return fmt::format("{}(\"{}\") answers differently without a reason pointer", name, text);
  }
  return {};
}

std::string Check(std::string_view text) {
  std::optional<int64_t> milli, value;
  if (auto b = CheckOne(text, api::ParseQuantityMilli, "ParseQuantityMilli", milli); !b.empty()) {
    return b;
  }
  if (auto b = CheckOne(text, api::ParseQuantityValue, "ParseQuantityValue", value); !b.empty()) {
    return b;
  }
  if (milli) {
    if (!value) return fmt::format("\"{}\": a milli value {} but no whole value", text, *milli);
    if (DivAway(*milli, 1000) != *value) {
      return fmt::format("\"{}\": milli {} but whole {}", text, *milli, *value);
    }
    const std::string shown = api::FormatMilli(*milli);
    if (api::ParseQuantityMilli(shown) != milli) {
      return fmt::format("FormatMilli({}) = \"{}\" does not parse back", *milli, shown);
    }
  }
  if (value) {
    const std::string shown = api::FormatBytes(*value);
    if (shown.find('.') == std::string::npos && api::ParseQuantityValue(shown) != value) {
      return fmt::format("FormatBytes({}) = \"{}\" does not parse back", *value, shown);
    }
  }
  return {};
}

}  // namespace

std::string CheckTarget(std::string_view input) { return Check(input); }

}  // namespace kmt::fuzz
