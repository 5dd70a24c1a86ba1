#include <stddef.h>
#include <zlib.h>

// zlib is a system library, not built with AddressSanitizer: a read past
// the end of a buffer handed to `crc32` goes unseen, and every record and
// header checksum reads through it. Under AddressSanitizer, check the range
// first, as the sanitizer's own interceptors do for memcpy, and report the
// first bad byte the way an instrumented read would (a heap-buffer-overflow
// with this stack). The Swift compiler tells an imported header nothing
// about the sanitizer, so the check looks for its runtime instead: on ELF,
// weak references that stay null unless the runtime is linked in. Elsewhere
// (Apple platforms, whose linker wants weak symbols found at link time) it
// is plain zlib.
#if defined(__ELF__)
extern void *__asan_region_is_poisoned(void *begin, size_t size) __attribute__((weak));
extern void __asan_report_load_n(void *address, size_t size) __attribute__((weak));
#endif

static inline uLong outbox_crc32(uLong crc, const Bytef *bytes, uInt count) {
#if defined(__ELF__)
    if (__asan_region_is_poisoned && __asan_report_load_n) {
        void *bad = __asan_region_is_poisoned((void *)bytes, count);
        if (bad) __asan_report_load_n(bad, 1);
    }
#endif
    return crc32(crc, bytes, count);
}
