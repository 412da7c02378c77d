#include "base/heap.h"

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
