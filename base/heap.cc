#include "base/heap.h"

// A C library header first: it is what defines __GLIBC__ (tested below).
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kmt::base {

void TrimHeap() {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  malloc_trim(0);
#endif
}

bool TuneHeap(int arenas) {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  bool ok = mallopt(M_ARENA_MAX, arenas) == 1;
  ok = mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1 && ok;
  ok = mallopt(M_TRIM_THRESHOLD, 1024 * 1024) == 1 && ok;
  return ok;
#else
  (void)arenas;
  return false;
#endif
}

}  // namespace kmt::base
