// fuzz/libfuzzer_main.cc — the libFuzzer harness shared by every target under fuzz/; built
// by fuzz/run.sh with clang -fsanitize=fuzzer together with one target's entry.cc (Bazel's
// toolchain here is gcc, which has no libFuzzer).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string broken =
      kmt::fuzz::CheckInput(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!broken.empty()) {
    std::fprintf(stderr, "broken promise: %s\n", broken.c_str());
    std::abort();
  }
  return 0;
}
