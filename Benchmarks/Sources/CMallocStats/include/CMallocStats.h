#ifndef C_MALLOC_STATS_H
#define C_MALLOC_STATS_H

#include <stddef.h>

/// Bytes the C allocator has handed out and not had back (small blocks in
/// the arenas plus mmap'ed large blocks), or -1 where the platform cannot
/// tell. Used to measure the in-memory cost of an index, per entry.
long long outbox_bench_heap_in_use(void);

#endif
