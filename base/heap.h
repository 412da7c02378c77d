// base/heap.h — handing freed heap memory back to the system.
#pragma once

namespace kmt::base {

// Returns the allocator's free pages to the kernel where the C library can (glibc's
// malloc_trim). Does nothing under ASan or TSan: the sanitizer's allocator owns the heap
// there and glibc's is never initialised, so malloc_trim would initialise it lazily, racing
// between threads (seen: a SEGV in mtrim under ASan).
void TrimHeap();

// The operator's allocator settings, set once at start before any other thread (glibc's
// mallopt; nothing elsewhere or under a sanitizer):
//   - at most `arenas` malloc arenas (glibc's default is 8 per core, each keeping its own
//     freed memory: 16 arenas held a leader's resident set at 30-40 MiB over a 1 h soak
//     with a 10-12 MB heap);
//   - a fixed mmap threshold of 128 KiB, and a trim threshold of 1 MiB: glibc otherwise
//     raises both to the largest block freed so far (up to 32 MiB), so after one large watch
//     event or list page, every later buffer of that size comes from an arena and its
//     pages stay resident after it is freed. Fixed, a large buffer is mapped and unmapped.
// Returns false when the C library refused a setting (or has no mallopt).
bool TuneHeap(int arenas);

}  // namespace kmt::base
