// Replays every input of the committed fuzz corpus (webhook/fuzz/corpus) through the fuzz
// target's entry point, so what the fuzzer once found stays fixed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "webhook/fuzz/fuzz_entry.h"

namespace kmt::webhook::fuzz {
namespace {

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator("webhook/fuzz/corpus")) {
    if (e.is_regular_file()) files.push_back(e.path().string());
  }
  std::ranges::sort(files);
  return files;
}

TEST_CASE("The committed corpus replays without a broken promise") {
  const auto files = CorpusFiles();
  REQUIRE(files.size() >= 60);
  for (const auto& path : files) {
    CAPTURE(path);
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(CheckAdmissionInput(ss.str()) == "");
  }
}

TEST_CASE("The entry point holds on edge inputs") {
  // Empty, an empty object, and nesting far deeper than the decoder accepts.
  CHECK(CheckAdmissionInput("").empty());
  CHECK(CheckAdmissionInput("{}").empty());
  CHECK(CheckAdmissionInput(std::string(100000, '[')).empty());
}

}  // namespace
}  // namespace kmt::webhook::fuzz
