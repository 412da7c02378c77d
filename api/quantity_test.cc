#include "api/quantity.h"

#include <catch2/catch.hpp>

namespace kmt::api {
namespace {

TEST_CASE("Quantities in milli-units, rounded up like Quantity.MilliValue") {
  auto [text, want] = GENERATE(table<std::string, int64_t>({
      {"100m", 100},       {"2", 2000},      {"0", 0},         {"0.5", 500},
      {".5", 500},         {"1.", 1000},     {"+3", 3000},     {"-3", -3000},
      {"1500m", 1500},     {"0.1m", 1},  // rounds up
      {"1u", 1},                         // rounds up
      {"250000000n", 250}, {"1e3", 1000000}, {"1E3", 1000000}, {"1e-3", 1},
      {"2k", 2000000},     {"1Ki", 1024000}, {"0.0001", 1},    {"00012", 12000},
  }));
  CAPTURE(text);
  CHECK(ParseQuantityMilli(text) == want);
}

TEST_CASE("Quantities in whole units, rounded up like Quantity.Value") {
  auto [text, want] = GENERATE(table<std::string, int64_t>({
      {"1Gi", 1073741824},
      {"512M", 512000000},
      {"2294Mi", 2294LL * 1024 * 1024},
      {"4687134721", 4687134721},
      {"1e3", 1000},
      {"1E", 1000000000000000000},  // exa, not an exponent
      {"7Ei", 7LL << 60},
      {"100m", 1},
      {"1.5Gi", 1610612736},
      {"0.5Ki", 512},
      {"50M", 50000000},
      {"110", 110},
      {"9223372036854775807", 9223372036854775807},
      {"123456789012345678901234e-10", 12345678901235},
      {"1e-100", 1},
  }));
  CAPTURE(text);
  CHECK(ParseQuantityValue(text) == want);
}

TEST_CASE("Bad quantities are errors") {
  auto [text, why] = GENERATE(table<std::string, std::string>({
      {"",
       "quantities must match the regular expression "
       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
      {"abc", "quantity has no digits"},
      {".", "quantity has no digits"},
      {"-", "quantity has no digits"},
      {"1Gb", "unknown quantity suffix"},
      {"1 Gi", "unknown quantity suffix"},
      {"1Xi", "unknown quantity suffix"},
      {"1e", "unknown quantity suffix"},
      {"1e+", "unknown quantity suffix"},
      {"1e3x", "unknown quantity suffix"},
      {"1e99999", "quantity exponent out of range"},
      {"9223372036854775808", "quantity is too large"},
      {"8Ei", "quantity is too large"},
      {"1e19", "quantity is too large"},
  }));
  CAPTURE(text);
  std::string error;
  CHECK_FALSE(ParseQuantityValue(text, &error).has_value());
  CHECK(error == why);
}

TEST_CASE("Milli of a large byte count overflows and says so") {
  std::string error;
  CHECK_FALSE(ParseQuantityMilli("1Ei", &error).has_value());
  CHECK(error == "quantity is too large");
  CHECK(ParseQuantityValue("1Ei") == int64_t{1} << 60);
}

TEST_CASE("Formatting for messages") {
  CHECK(FormatBytes(2LL << 30) == "2Gi");
  CHECK(FormatBytes(1536LL << 20) == "1536Mi");
  CHECK(FormatBytes(4687134721) == "4.4Gi");
  CHECK(FormatBytes(1000) == "1000");
  CHECK(FormatBytes(0) == "0");
  CHECK(FormatBytes(-(1LL << 30)) == "-1Gi");
  CHECK(FormatMilli(2000) == "2");
  CHECK(FormatMilli(500) == "500m");
  CHECK(FormatMilli(1500) == "1500m");
  CHECK(FormatMilli(0) == "0");
}

}  // namespace
}  // namespace kmt::api
