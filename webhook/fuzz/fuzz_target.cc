// libFuzzer harness; built by webhook/fuzz/run.sh with clang -fsanitize=fuzzer (not by
// Bazel, whose toolchain here is gcc). The same entry point is replayed by
// fuzz_replay_test.cc under Bazel.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "webhook/fuzz/fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string broken = kmt::webhook::fuzz::CheckAdmissionInput(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!broken.empty()) {
    std::fprintf(stderr, "broken promise: %s\n", broken.c_str());
    std::abort();
  }
  return 0;
}
