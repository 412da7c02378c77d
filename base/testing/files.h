// base/testing/files.h — reading the test data that Bazel puts beside a test (its `data`).
//
// Tests read golden objects and recorded streams by their workspace-relative path, the test's
// working directory. These helpers throw when a file cannot be read, so a missing `data` entry
// fails the test that needs it with the path named, rather than comparing against "".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"

namespace kmt::base::testing {

// The bytes of the file at `path`. Throws std::runtime_error naming the path when it cannot be
// opened or read.
std::string ReadTestFile(const std::string& path);

// Json::parse of ReadTestFile(path); throws on a file that is not JSON.
Json ReadTestJson(const std::string& path);

// The names of the files in `dir` that end with `suffix`, without the suffix, sorted: the cases
// of a golden directory, so that a case added there is run by every test that iterates them.
// Throws std::runtime_error when `dir` cannot be listed or holds no such file.
std::vector<std::string> TestFileStems(const std::string& dir, std::string_view suffix);

}  // namespace kmt::base::testing
