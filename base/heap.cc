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

}  // namespace kmt::base
