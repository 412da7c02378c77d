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
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6)) * 1024;
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

TEST_CASE("After TuneHeap, large buffers freed go back at once, however large the last one") {
  // glibc's dynamic threshold: freeing a mapped 8 MiB block raises the mmap threshold to
  // 8 MiB, so later 4 MiB buffers come from the heap; with a block allocated after each
  // (pinning it in the middle), their pages stay resident after free. TuneHeap fixes the
  // threshold at 128 KiB: each buffer is mapped, and unmapped by free.
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  REQUIRE(TuneHeap(2));
  // volatile: the compiler may not elide an allocation whose memory nobody reads.
  char* volatile big = static_cast<char*>(std::malloc(8u << 20));
  REQUIRE(big != nullptr);
  big[0] = 1;
  std::free(big);
  const long before = ResidentBytes();
  std::vector<char*> buffers, pins;
  for (int i = 0; i < 8; ++i) {
    char* volatile p = static_cast<char*>(std::malloc(4u << 20));
    REQUIRE(p != nullptr);
    for (size_t j = 0; j < (4u << 20); j += 4096) p[j] = 1;
    buffers.push_back(static_cast<char*>(p));
    char* volatile pin = static_cast<char*>(std::malloc(64u << 10));  // no free slot fits
    REQUIRE(pin != nullptr);
    pin[0] = 1;
    pins.push_back(static_cast<char*>(pin));
  }
  for (char* p : buffers) std::free(p);
  const long after = ResidentBytes();
  for (char* p : pins) std::free(p);
  INFO("VmRSS before " << (before >> 20) << " MiB, after 32 MiB of buffers freed " << (after >> 20)
                       << " MiB");
  CHECK(after - before < (8L << 20));
#else
  CHECK_FALSE(TuneHeap(2));  // the sanitizer's allocator: nothing set
#endif
}

}  // namespace
}  // namespace kmt::base
