// base/heap.h — handing freed heap memory back to the system.
#pragma once

namespace kmt::base {

// Returns the allocator's free pages to the kernel where the C library can (glibc's
// malloc_trim). Does nothing under ASan or TSan: the sanitizer's allocator owns the heap
// there and glibc's is never initialised, so malloc_trim would initialise it lazily, racing
// between threads (seen: a SEGV in mtrim under ASan).
void TrimHeap();

}  // namespace kmt::base
