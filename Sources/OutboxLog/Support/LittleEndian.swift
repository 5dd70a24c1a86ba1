/// Little-endian integer encoding for the on-disk format.
///
/// Every multi-byte integer in a segment file is little-endian, whatever the
/// machine (see Docs/FORMAT.md); these helpers are the only place that knows.
extension Array where Element == UInt8 {
    @inline(__always)
    package mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

extension UnsafeRawBufferPointer {
    /// Reads a little-endian integer at `offset`; the caller checks bounds.
    @inline(__always)
    package func loadLittleEndian<T: FixedWidthInteger>(at offset: Int, as: T.Type = T.self) -> T {
        T(littleEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

extension UnsafeMutableRawBufferPointer {
    @inline(__always)
    package func storeLittleEndian<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
    }
}
