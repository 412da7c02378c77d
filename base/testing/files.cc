#include "base/testing/files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace kmt::base::testing {

std::string ReadTestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) throw std::runtime_error("cannot open test file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read test file " + path);
  return ss.str();
}

Json ReadTestJson(const std::string& path) { return Json::parse(ReadTestFile(path)); }

std::vector<std::string> TestFileStems(const std::string& dir, std::string_view suffix) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) throw std::runtime_error("cannot list test directory " + dir + ": " + ec.message());
  std::vector<std::string> stems;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      stems.push_back(name.substr(0, name.size() - suffix.size()));
    }
  }
  if (stems.empty()) {
    throw std::runtime_error("no file ending in " + std::string(suffix) + " in " + dir);
  }
  std::ranges::sort(stems);
  return stems;
}

}  // namespace kmt::base::testing
