#include "bench/report.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace kmt::bench {

namespace {

std::string Cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// Three significant digits of `v` (v >= 0) followed by the unit.
std::string Sig3(double v, const char* unit) {
  if (v >= 100) return fmt::format("{:.0f} {}", v, unit);
  if (v >= 10) return fmt::format("{:.1f} {}", v, unit);
  return fmt::format("{:.2f} {}", v, unit);
}

}  // namespace

std::string MarkdownTable(const std::string& title, const std::vector<Row>& rows,
                          const std::vector<std::string>& notes) {
  std::string out = fmt::format("### {}\n\n", title);
  out += "| figure | value | floor | ratio | budget | pass |\n";
  out += "|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    std::string pass = !r.pass ? "" : (*r.pass ? "pass" : "**miss**");
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", Cell(r.figure), Cell(r.value),
                       Cell(r.floor), Cell(r.ratio), Cell(r.budget), pass);
  }
  for (const std::string& n : notes) out += "\n" + n + "\n";
  out += "\n";
  return out;
}

std::string FormatSeconds(double s) {
  if (s < 1e-3) return Sig3(s * 1e6, "µs");
  if (s < 1) return Sig3(s * 1e3, "ms");
  return Sig3(s, "s");
}

std::string FormatRate(double r) {
  if (r >= 1e6) return Sig3(r / 1e6, "M/s");
  if (r >= 1e3) return Sig3(r / 1e3, "k/s");
  return Sig3(r, "/s");
}

std::string FormatBytes(double b) {
  if (b >= 1024.0 * 1024.0) return Sig3(b / (1024.0 * 1024.0), "MiB");
  if (b >= 1024.0) return Sig3(b / 1024.0, "KiB");
  return fmt::format("{:.0f} B", b);
}

std::string FormatRatio(double ratio) {
  if (ratio == 0 || !std::isfinite(ratio)) return "n/a";
  return fmt::format("{:.2f}×", ratio);
}

void AppendToFile(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  std::ofstream f(path, std::ios::app);
  if (!f) throw std::runtime_error("cannot open " + path + " for appending");
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::vector<double> ParseRates(const std::string& s) {
  std::vector<double> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(pos, comma - pos);
    char* end = nullptr;
    const double rate = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !(rate > 0)) {
      throw std::invalid_argument("--rates: \"" + item + "\" is not a positive number");
    }
    out.push_back(rate);
    pos = comma + 1;
  }
  return out;
}

CLI::Option* AddRatesOption(CLI::App& app, std::vector<double>& rates, const std::string& help) {
  return app.add_option_function<std::string>(
      "--rates",
      [&rates](const std::string& v) {
        try {
          rates = ParseRates(v);
        } catch (const std::invalid_argument& e) {
          throw CLI::ValidationError("--rates", e.what());
        }
      },
      help);
}

}  // namespace kmt::bench
