#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Memory taken from the kernel with an anonymous `mmap` and given back
/// with `munmap`, not from `malloc`: for the large, short-lived buffers of
/// an open (a scan's read buffer, the scratch of a table's bulk load).
///
/// Why not `malloc`: glibc serves a block of this size (hundreds of KiB to
/// a few MiB) with `mmap` the first time, and freeing it raises glibc's
/// `mmap` threshold to its size and the heap's trim threshold to twice
/// that. Every later buffer of the open then comes from the thread's heap,
/// and once freed it stays resident for the life of the process:
/// `malloc_trim` does not shrink the top of a thread's heap. An open of a
/// 10,000-key store kept 4–5 MiB it no longer used. Mapped directly, a
/// buffer's pages return to the system when it is released.
///
/// The pages are zero-filled on first touch. Not copyable: one owner
/// releases it.
@usableFromInline package struct MappedBuffer: ~Copyable {
    /// Why a mapping failed: `mmap`'s `errno` (`ENOMEM` also for a size no
    /// mapping can have).
    package struct Failure: Error {
        package var errno: Int32
    }

    @usableFromInline package private(set) var bytes: UnsafeMutableRawBufferPointer

    /// Maps `byteCount` bytes (rounded up to whole pages); none for 0.
    @usableFromInline package init(byteCount: Int) throws(Failure) {
        guard byteCount >= 0, byteCount <= Int.max - 4095 else { throw Failure(errno: ENOMEM) }
        let size = (byteCount + 4095) & ~4095
        guard size > 0 else {
            bytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)
            return
        }
        let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let address, address != MAP_FAILED else { throw Failure(errno: errno) }
        bytes = UnsafeMutableRawBufferPointer(start: address, count: size)
    }

    /// An empty buffer: nothing mapped.
    @usableFromInline package init() { bytes = UnsafeMutableRawBufferPointer(start: nil, count: 0) }

    @usableFromInline package var count: Int { bytes.count }

    /// The mapping, handed on whole (not unmapped); this buffer is then
    /// empty. For a buffer used by one reader after another: its pages are
    /// faulted in once, not once per reader.
    @usableFromInline package mutating func take() -> MappedBuffer {
        let taken = MappedBuffer(adopting: bytes)
        bytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        return taken
    }

    private init(adopting bytes: UnsafeMutableRawBufferPointer) { self.bytes = bytes }

    deinit {
        if let start = bytes.baseAddress { _ = munmap(start, bytes.count) }
    }
}
