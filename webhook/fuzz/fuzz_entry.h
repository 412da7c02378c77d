// webhook/fuzz/fuzz_entry.h — the one entry point of the admission fuzz target, shared by
// the libFuzzer harness (fuzz_target.cc, built by run.sh with clang outside Bazel) and the
// Catch2 test that replays the committed corpus under Bazel (fuzz_replay_test.cc).
#pragma once

#include <string>
#include <string_view>

namespace kmt::webhook::fuzz {

// Feeds `input` to the AdmissionReview shell (decoder, a term-reading admitter, encoder)
// and, as the annotation text, to the term parser, and checks their promises:
//   - nothing throws;
//   - the shell answers 200, 400 or 415 with a JSON body, and a 200 answer echoes the uid
//     the decoder read;
//   - ParseAddedTerm yields a term iff it yields no causes, every cause's field lies under
//     the annotation's path, and a parsed term survives ToJson → strict parse → validation
//     unchanged.
// Returns "" when all held, else a description of the first broken promise.
std::string CheckAdmissionInput(std::string_view input);

}  // namespace kmt::webhook::fuzz
