#include "webhook/testing/golden.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kmt::webhook::testing {

nlohmann::json ReadTestdataJson(const std::string& relpath) {
  const std::string path = std::string(kTestdata) + "/" + relpath;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

nlohmann::json Golden(const std::string& relpath, const nlohmann::json& actual) {
  if (const char* dir = std::getenv("KMT_WRITE_GOLDEN"); dir != nullptr && *dir != '\0') {
    std::ofstream out(std::string(dir) + "/" + relpath);
    out << actual.dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write golden " + relpath);
    return actual;
  }
  return ReadTestdataJson(relpath);
}

std::vector<std::string> TestdataCases(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> names;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(kTestdata) + "/" + dir)) {
    std::string name = entry.path().filename().string();
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      names.push_back(name.substr(0, name.size() - suffix.size()));
    }
  }
  std::ranges::sort(names);
  return names;
}

}  // namespace kmt::webhook::testing
