// bench/report.h — the Markdown tables of bench/RESULTS.md.
//
// Every harness prints one table (and appends it to the file given with --report): one row
// per figure with the floor measured in the same run, their ratio, the budget from
// DESIGN.md §6 and whether it is met. bench/run.sh concatenates the tables.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kmt::bench {

struct Row {
  std::string figure;        // "p99 at 1000 req/s"
  std::string value;         // "412 µs"
  std::string floor;         // "230 µs" ("" when the row has none)
  std::string ratio;         // "1.79×" ("" when the row has none)
  std::string budget;        // "≤ 1 ms" ("" when the row has none)
  std::optional<bool> pass;  // nullopt: no budget applies to this row
};

// "### title\n\n| figure | value | floor | ratio | budget | pass |\n|---|...|\n| ... |\n"
// followed by the notes, one paragraph each. Cells are escaped ('|' → '\|').
std::string MarkdownTable(const std::string& title, const std::vector<Row>& rows,
                          const std::vector<std::string>& notes = {});

// Human units, three significant digits: 0.000412 s → "412 µs", 0.0123 → "12.3 ms",
// 1.5 → "1.50 s".
std::string FormatSeconds(double seconds);
// 1234567 → "1.23 M/s", 4321 → "4.32 k/s", 12 → "12.0 /s".
std::string FormatRate(double per_second);
// 31457280 → "30.0 MiB", 2048 → "2.00 KiB", 100 → "100 B".
std::string FormatBytes(double bytes);
// 1.791 → "1.79×"; 0 → "n/a".
std::string FormatRatio(double ratio);

// A benchmark's --rates: "1000,3000,5000" → {1000, 3000, 5000}. Throws std::invalid_argument
// naming the piece that is not a positive number.
std::vector<double> ParseRates(const std::string& s);

// Adds --rates to `app`, parsed by ParseRates into `rates`; a bad list is CLI11's usage error
// (exit status 105) naming the piece, not a run at rate 0.
CLI::Option* AddRatesOption(CLI::App& app, std::vector<double>& rates, const std::string& help);

// Appends `text` to `path` (creating it); does nothing for an empty path. Throws
// std::runtime_error when the file cannot be written.
void AppendToFile(const std::string& path, const std::string& text);

}  // namespace kmt::bench
