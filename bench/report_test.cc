#include "bench/report.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace kmt::bench {
namespace {

TEST_CASE("Units have three significant digits") {
  auto [seconds, want] = GENERATE(table<double, std::string>({{0.000412, "412 µs"},
                                                              {0.0000012, "1.20 µs"},
                                                              {0.0123, "12.3 ms"},
                                                              {1.5, "1.50 s"},
                                                              {250.0, "250 s"}}));
  CAPTURE(seconds);
  CHECK(FormatSeconds(seconds) == want);
  CHECK(FormatRate(1234567) == "1.23 M/s");
  CHECK(FormatRate(4321) == "4.32 k/s");
  CHECK(FormatRate(12) == "12.0 /s");
  CHECK(FormatBytes(31457280) == "30.0 MiB");
  CHECK(FormatBytes(2048) == "2.00 KiB");
  CHECK(FormatBytes(100) == "100 B");
  CHECK(FormatRatio(1.791) == "1.79×");
  CHECK(FormatRatio(0) == "n/a");
}

TEST_CASE("MarkdownTable renders rows, pass/miss and notes") {
  std::string t = MarkdownTable("Webhook",
                                {{"p99 a|b", "412 µs", "230 µs", "1.79×", "≤ 1 ms", true},
                                 {"p99 at 3000", "2.00 ms", "1.00 ms", "2.00×", "", false},
                                 {"errors", "0", "", "", "", std::nullopt}},
                                {"SAR answered in memory."});
  CHECK(t ==
        "### Webhook\n\n"
        "| figure | value | floor | ratio | budget | pass |\n"
        "|---|---|---|---|---|---|\n"
        "| p99 a\\|b | 412 µs | 230 µs | 1.79× | ≤ 1 ms | pass |\n"
        "| p99 at 3000 | 2.00 ms | 1.00 ms | 2.00× |  | **miss** |\n"
        "| errors | 0 |  |  |  |  |\n"
        "\nSAR answered in memory.\n\n");
}

TEST_CASE("AppendToFile appends and refuses unwritable paths") {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/report_test.md";
  std::remove(path.c_str());
  AppendToFile(path, "a\n");
  AppendToFile(path, "b\n");
  AppendToFile("", "ignored");
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  CHECK(ss.str() == "a\nb\n");
  CHECK_THROWS_WITH(AppendToFile("/nonexistent-dir/x.md", "x"),
                    "cannot open /nonexistent-dir/x.md for appending");
}

TEST_CASE("ParseRates reads a comma-separated --rates") {
  CHECK(ParseRates("1000,3000,5000") == std::vector<double>{1000, 3000, 5000});
  CHECK(ParseRates("50") == std::vector<double>{50});
  CHECK(ParseRates("0.5,2") == std::vector<double>{0.5, 2});
}

TEST_CASE("ParseRates refuses what is not a list of positive numbers") {
  for (const char* bad : {"", "abc", "100,", "100,x", "5e", "0", "-50", "1000 "}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(ParseRates(bad), std::invalid_argument);
  }
}

TEST_CASE("AddRatesOption parses --rates, and a bad list is a usage error naming the piece") {
  std::vector<double> rates{1};
  CLI::App app{"t"};
  AddRatesOption(app, rates, "rates");
  // CLI::App::parse takes its arguments reversed and consumes them.
  const auto parse = [&app](std::vector<std::string> args) {
    std::ranges::reverse(args);
    app.parse(args);
  };
  parse({"--rates", "50,200"});
  CHECK(rates == std::vector<double>{50, 200});

  CHECK_THROWS_WITH(parse({"--rates", "50,x"}),
                    Catch::Matchers::Contains("\"x\" is not a positive number"));
  try {
    parse({"--rates", "0"});
    FAIL("a rate of 0 was accepted");
  } catch (const CLI::ValidationError& e) {
    CHECK(e.get_exit_code() == static_cast<int>(CLI::ExitCodes::ValidationError));
  }
  CHECK(rates == std::vector<double>{50, 200});
}

}  // namespace
}  // namespace kmt::bench
