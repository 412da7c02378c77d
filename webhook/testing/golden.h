// webhook/testing/golden.h — golden JSON files under webhook/testdata for the admitter tables.
//
// Tests run with the workspace as working directory (Bazel runfiles), so paths are
// workspace-relative. With KMT_WRITE_GOLDEN=<absolute path of webhook/testdata in the
// source tree>, Golden() writes the actual value instead of comparing (review the diff!).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kmt::webhook::testing {

inline constexpr const char* kTestdata = "webhook/testdata";

// Parses a JSON file (path relative to kTestdata); throws std::runtime_error when
// unreadable or invalid.
nlohmann::json ReadTestdataJson(const std::string& relpath);

// The golden value at `relpath`, or `actual` itself after writing it when KMT_WRITE_GOLDEN
// is set. Throws std::runtime_error when the file is missing.
nlohmann::json Golden(const std::string& relpath, const nlohmann::json& actual);

// Names of the files in kTestdata/`dir` ending in `suffix`, without the suffix, sorted.
std::vector<std::string> TestdataCases(const std::string& dir, const std::string& suffix);

}  // namespace kmt::webhook::testing
