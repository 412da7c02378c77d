// fuzz/replay_test.cc — replays one target's committed corpus through its CheckInput. Each
// target's cc_test links this file with its entry library and sets, in `env`,
//   KMT_FUZZ_CORPUS      the corpus directory (workspace-relative, a runfile)
//   KMT_FUZZ_MIN_CORPUS  how many inputs it must hold at least (a glob that silently
//                        matched nothing would otherwise pass)
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/entry.h"

namespace kmt::fuzz {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::vector<std::string> CorpusFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path().string());
  }
  std::ranges::sort(files);
  return files;
}

TEST_CASE("The committed corpus replays without a broken promise") {
  const std::string dir = Env("KMT_FUZZ_CORPUS");
  REQUIRE_FALSE(dir.empty());
  const auto files = CorpusFiles(dir);
  REQUIRE(files.size() >= std::stoul(Env("KMT_FUZZ_MIN_CORPUS")));
  for (const auto& path : files) {
    CAPTURE(path);
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(CheckInput(ss.str()) == "");
  }
}

TEST_CASE("The entry point holds on edge inputs") {
  CHECK(CheckInput("") == "");
  CHECK(CheckInput(std::string(1, '\0')) == "");
  CHECK(CheckInput(std::string(1, '\xff')) == "");
  CHECK(CheckInput(std::string(100000, '[')) == "");
  CHECK(CheckInput(std::string(100000, '\n')) == "");
}

}  // namespace
}  // namespace kmt::fuzz
