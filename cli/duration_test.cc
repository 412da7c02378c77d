#include "cli/duration.h"

#include <catch2/catch.hpp>

namespace kmt::cli {
namespace {

using std::chrono::milliseconds;

TEST_CASE("ParseDuration accepts Go's duration syntax") {
  struct Row {
    const char* text;
    int64_t ms;
  };
  auto row = GENERATE(Row{"0", 0}, Row{"90s", 90000}, Row{"5m", 300000}, Row{"1h30m", 5400000},
                      Row{"1.5h", 5400000}, Row{"250ms", 250}, Row{"2m3.5s", 123500},
                      Row{"+10s", 10000}, Row{"1500us", 2}, Row{"3000000ns", 3});
  CAPTURE(row.text);
  std::string err;
  auto d = ParseDuration(row.text, &err);
  REQUIRE(d.has_value());
  CHECK(d->count() == row.ms);
  CHECK(err.empty());
}

TEST_CASE("ParseDuration rejects bad input with a message naming it") {
  struct Row {
    const char* text;
    const char* message;
  };
  auto row =
      GENERATE(Row{"", "invalid duration \"\": empty"},
               Row{"10", "invalid duration \"10\": missing unit (one of ns, us, ms, s, m, h)"},
               Row{"-5s", "invalid duration \"-5s\": must not be negative"},
               Row{"5d", "invalid duration \"5d\": unknown unit \"d\""},
               Row{"s", "invalid duration \"s\": expected a number"},
               Row{"1h.", "invalid duration \"1h.\": expected a number"});
  CAPTURE(row.text);
  std::string err;
  CHECK_FALSE(ParseDuration(row.text, &err).has_value());
  CHECK(err == row.message);
}

TEST_CASE("FormatDuration prints compact Go-like text") {
  CHECK(FormatDuration(milliseconds(250)) == "250ms");
  CHECK(FormatDuration(milliseconds(45000)) == "45s");
  CHECK(FormatDuration(milliseconds(3723000)) == "1h2m3s");
  CHECK(FormatDuration(milliseconds(120000)) == "2m0s");
}

TEST_CASE("HumanAge prints kubectl's AGE column") {
  using namespace std::chrono_literals;
  struct Row {
    std::chrono::nanoseconds age;
    const char* want;
  };
  auto row = GENERATE(Row{-3s, "<invalid>"}, Row{-1500ms, "0s"}, Row{0s, "0s"}, Row{59s, "59s"},
                      Row{119s, "119s"}, Row{120s, "2m"}, Row{200s, "3m20s"}, Row{599s, "9m59s"},
                      Row{600s, "10m"}, Row{179min, "179m"}, Row{180min, "3h"},
                      Row{5h + 30min, "5h30m"}, Row{8h, "8h"}, Row{47h + 59min, "47h"},
                      Row{48h, "2d"}, Row{52h, "2d4h"}, Row{24h * 8, "8d"}, Row{24h * 729, "729d"},
                      Row{24h * 730, "2y"}, Row{24h * 760, "2y30d"}, Row{24h * 365 * 8, "8y"});
  CAPTURE(row.age.count());
  CHECK(HumanAge(row.age) == row.want);
}

}  // namespace
}  // namespace kmt::cli
