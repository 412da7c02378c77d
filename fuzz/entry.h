// fuzz/entry.h — the one function every fuzz target under fuzz/ defines.
//
// Each target (fuzz/<name>/entry.cc) feeds `input` to the real entry points of one unit and
// checks the promises its header makes. The same function is called by the libFuzzer
// harness (fuzz/libfuzzer_main.cc, built by fuzz/run.sh with clang outside Bazel) and by the
// Bazel test that replays the target's committed corpus (fuzz/replay_test.cc), so a finding
// kept in the corpus stays fixed.
#pragma once

#include <string>
#include <string_view>

namespace kmt::fuzz {

// "" when every promise held for `input`, else a description of the first broken one.
// Never throws: an exception escaping the code under test is reported as a broken promise.
// Defined once (fuzz/entry.cc) around the target's CheckTarget.
std::string CheckInput(std::string_view input);

// The target's own checks, defined by each fuzz/<name>/entry.cc; may throw (CheckInput
// turns that into a broken promise).
std::string CheckTarget(std::string_view input);

}  // namespace kmt::fuzz
