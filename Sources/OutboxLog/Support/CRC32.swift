import CZlib

/// CRC-32 (the IEEE polynomial, as in zlib, gzip and PNG), computed by zlib
/// (through `outbox_crc32`, Sources/CZlib/shim.h: under AddressSanitizer it
/// checks the range first, since zlib itself is not instrumented).
///
/// Check value: `CRC32.checksum("123456789".utf8)` is `0xCBF43926`.
public struct CRC32: Sendable, Hashable {
    /// The running checksum.
    public private(set) var value: UInt32

    /// Starts a checksum, optionally continuing from an earlier `value`.
    public init(continuing value: UInt32 = 0) { self.value = value }

    /// Feeds `bytes` into the checksum.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var base = bytes.baseAddress?.assumingMemoryBound(to: Bytef.self) else { return }
        var remaining = bytes.count
        var crc = uLong(value)
        // zlib takes a 32-bit length: feed huge buffers in chunks.
        while remaining > 0 {
            let chunk = min(remaining, Int(UInt32.max / 2))
            crc = outbox_crc32(crc, base, uInt(chunk))
            base += chunk
            remaining -= chunk
        }
        value = UInt32(truncatingIfNeeded: crc)
    }

    /// Feeds the bytes of a collection into the checksum.
    public mutating func update<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil {
            let copy = Array(bytes)
            copy.withUnsafeBytes { update($0) }
        }
    }

    /// The checksum of `bytes`.
    public static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt32 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }

    /// The checksum of the bytes in `buffer`.
    public static func checksum(_ buffer: UnsafeRawBufferPointer) -> UInt32 {
        var crc = CRC32()
        crc.update(buffer)
        return crc.value
    }
}
