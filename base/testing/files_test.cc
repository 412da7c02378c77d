// base/testing/files_test.cc — the test-data readers fail loudly and list a golden directory.
#include "base/testing/files.h"

#include <catch2/catch.hpp>
#include <stdexcept>

namespace kmt::base::testing {
namespace {

constexpr const char* kDir = "base/testing/testdata";

TEST_CASE("ReadTestFile returns the bytes, and names the path it cannot open") {
  CHECK(ReadTestFile(std::string(kDir) + "/one.case.json") == "{\"a\": 1}\n");
  CHECK_THROWS_WITH(ReadTestFile(std::string(kDir) + "/absent.json"),
                    "cannot open test file base/testing/testdata/absent.json");
}

TEST_CASE("ReadTestJson parses, and throws on a file that is not JSON") {
  CHECK(ReadTestJson(std::string(kDir) + "/two.case.json") == Json{{"b", {2}}});
  CHECK_THROWS_AS(ReadTestJson(std::string(kDir) + "/broken.txt"), Json::parse_error);
}

TEST_CASE("TestFileStems lists a directory's cases by suffix, sorted") {
  CHECK(TestFileStems(kDir, ".case.json") == std::vector<std::string>{"one", "two"});
  CHECK(TestFileStems(kDir, ".txt") == std::vector<std::string>{"broken"});
  CHECK_THROWS_WITH(TestFileStems(kDir, ".pod.json"),
                    "no file ending in .pod.json in base/testing/testdata");
  CHECK_THROWS_WITH(TestFileStems("base/testing/absent", ".json"),
                    Catch::Matchers::StartsWith("cannot list test directory base/testing/absent"));
}

}  // namespace
}  // namespace kmt::base::testing
