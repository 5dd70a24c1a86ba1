import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A scan's read buffer, taken from the kernel with an anonymous `mmap`
/// and given back with `munmap`, not from `malloc`.
///
/// Why not `malloc`: glibc serves a block of this size (hundreds of KiB to
/// a few MiB) with `mmap` the first time, and freeing it raises glibc's
/// `mmap` threshold to its size and the heap's trim threshold to twice
/// that. Every later buffer of the open then comes from the recovery
/// thread's heap, and once freed it stays resident for the life of the
/// process: `malloc_trim` does not shrink the top of a thread's heap. An
/// open of a 10,000-key store kept 4–5 MiB it no longer used. Mapped
/// directly, a buffer's pages return to the system when the scan ends.
///
/// The pages are zero-filled on first touch, like a fresh `malloc` block.
struct ScanBuffer {
    private(set) var bytes: UnsafeMutableRawBufferPointer

    /// An empty buffer: nothing mapped.
    init() { bytes = UnsafeMutableRawBufferPointer(start: nil, count: 0) }

    /// Maps `byteCount` bytes (rounded up to whole pages).
    ///
    /// - Throws: the `mmap` failure, such as `ENOMEM` (also for a size no
    ///   mapping can have).
    init(byteCount: Int) throws(Errno) {
        guard byteCount >= 0, byteCount <= Int.max - 4095 else { throw .noMemory }
        let size = (byteCount + 4095) & ~4095
        guard size > 0 else {
            bytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)
            return
        }
        let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let address, address != MAP_FAILED else { throw Errno(rawValue: errno) }
        bytes = UnsafeMutableRawBufferPointer(start: address, count: size)
    }

    var count: Int { bytes.count }

    /// Unmaps the pages; the buffer is empty afterwards.
    mutating func release() {
        if let start = bytes.baseAddress { _ = munmap(start, bytes.count) }
        bytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    }
}
