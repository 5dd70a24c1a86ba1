#include "CMallocStats.h"

#if defined(__linux__)
#include <malloc.h>  /* also defines __GLIBC__ on glibc */
#endif

#if defined(__linux__) && defined(__GLIBC__)

long long outbox_bench_heap_in_use(void) {
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)
    struct mallinfo2 info = mallinfo2();
    return (long long)(info.uordblks + info.hblkhd);
#else
    struct mallinfo info = mallinfo();
    return (long long)(unsigned)info.uordblks + (long long)(unsigned)info.hblkhd;
#endif
}
#elif defined(__APPLE__)
#include <malloc/malloc.h>

long long outbox_bench_heap_in_use(void) {
    malloc_statistics_t stats;
    malloc_zone_statistics(NULL, &stats);
    return (long long)stats.size_in_use;
}
#else
long long outbox_bench_heap_in_use(void) { return -1; }
#endif
