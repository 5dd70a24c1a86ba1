import Foundation

/// Appends little-endian values to a byte array.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func uint16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func uint32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func uint64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func int64(_ value: Int64) { uint64(UInt64(bitPattern: value)) }
    /// Exactly `count` bytes: `value` cut or zero-padded.
    mutating func fixed(_ value: [UInt8], count: Int) {
        bytes.append(contentsOf: value.prefix(count))
        if value.count < count { bytes.append(contentsOf: repeatElement(0, count: count - value.count)) }
    }
    /// A u16 length and the bytes (at most 65535).
    mutating func bytes16(_ value: [UInt8]) {
        uint16(UInt16(min(value.count, Int(UInt16.max))))
        bytes.append(contentsOf: value.prefix(Int(UInt16.max)))
    }
    /// A u16 length and the UTF-8 bytes (cut at 65535 bytes).
    mutating func string16(_ value: String) {
        let utf8 = Array(value.utf8.prefix(Int(UInt16.max)))
        uint16(UInt16(utf8.count))
        bytes.append(contentsOf: utf8)
    }
}

/// Reads little-endian values; every read returns `nil` past the end.
struct ByteReader {
    private var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    var isAtEnd: Bool { bytes.isEmpty }

    mutating func fixed(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count >= count else { return nil }
        defer { bytes = bytes.dropFirst(count) }
        return Array(bytes.prefix(count))
    }

    private mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        guard let raw = fixed(MemoryLayout<T>.size) else { return nil }
        return raw.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(as: T.self)) }
    }

    mutating func uint16() -> UInt16? { integer(UInt16.self) }
    mutating func uint32() -> UInt32? { integer(UInt32.self) }
    mutating func uint64() -> UInt64? { integer(UInt64.self) }
    mutating func int64() -> Int64? { uint64().map { Int64(bitPattern: $0) } }

    mutating func bytes16() -> [UInt8]? {
        guard let count = uint16() else { return nil }
        return fixed(Int(count))
    }

    mutating func string16() -> String? {
        guard let count = uint16(), let raw = fixed(Int(count)) else { return nil }
        return String(checkedUTF8: raw)
    }
}
