// The operator's child process: which file a failed start blames.
#include "bench/operator_process.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace kmt::bench {
namespace {

std::string StartError(const std::string& binary, const std::string& log) {
  try {
    OperatorProcess p(binary, {}, log);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("a log file in a missing directory is named as the fault, not the binary") {
  const std::string log = "/nonexistent-kmt-bench-dir/operator.log";
  const std::string what = StartError("/bin/true", log);
  CHECK(what.find("cannot open the operator's log file " + log) != std::string::npos);
  CHECK(what.find("No such file or directory") != std::string::npos);
}

TEST_CASE("a missing binary is named as the fault") {
  const std::string log = std::string(std::getenv("TEST_TMPDIR")) + "/operator.log";
  const std::string what = StartError("/nonexistent-kmt-bench-operator", log);
  CHECK(what.find("cannot start /nonexistent-kmt-bench-operator") != std::string::npos);
}

TEST_CASE("the child's stdout and stderr go to the log") {
  const std::string log = std::string(std::getenv("TEST_TMPDIR")) + "/echo.log";
  {
    OperatorProcess p("/bin/sh", {"-c", "echo out; echo err >&2"}, log);
    for (int i = 0; i < 200 && p.RssBytes(); ++i) usleep(10000);  // until it exits
  }
  std::ifstream f(log);
  std::stringstream text;
  text << f.rdbuf();
  CHECK(text.str() == "out\nerr\n");
}

}  // namespace
}  // namespace kmt::bench
