#include "base/heap.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace kmt::base {
namespace {

// VmRSS of this process in bytes (0 when /proc is not there).
long ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) * 1024;
  }
  return 0;
}

TEST_CASE("TrimHeap hands the freed middle of the heap back to the kernel") {
  // 64 MiB in small blocks (below the mmap threshold: they live in the heap), then one
  // block above them that stays: free() alone can then release nothing, as the top of the
  // heap is pinned; only a trim of the free pages in the middle gives the memory back.
  constexpr size_t kBlock = 512;
  constexpr size_t kBlocks = (64u << 20) / kBlock;
  std::vector<char*> blocks;
  blocks.reserve(kBlocks);
  for (size_t i = 0; i < kBlocks; ++i) {
    char* p = static_cast<char*>(std::malloc(kBlock));
    REQUIRE(p != nullptr);
    for (size_t j = 0; j < kBlock; j += 64) p[j] = static_cast<char>(i);
    blocks.push_back(p);
  }
  char* pin = static_cast<char*>(std::malloc(kBlock));
  REQUIRE(pin != nullptr);
  pin[0] = 1;
  const long full = ResidentBytes();
  for (char* p : blocks) std::free(p);
  const long freed = ResidentBytes();
  TrimHeap();
  const long trimmed = ResidentBytes();
  std::free(pin);
  INFO("VmRSS full " << (full >> 20) << " MiB, after free " << (freed >> 20)
                     << " MiB, after TrimHeap " << (trimmed >> 20) << " MiB");
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // glibc: free() kept the pages (the pin), the trim returned at least 48 of the 64 MiB.
  CHECK(freed > trimmed);
  CHECK(freed - trimmed >= (48L << 20));
#else
  // The sanitizer's allocator owns the heap: TrimHeap leaves it alone (and must not crash).
  CHECK(trimmed > 0);
#endif
}

}  // namespace
}  // namespace kmt::base
