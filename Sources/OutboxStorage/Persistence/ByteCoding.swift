import Foundation

/// Appends the little-endian binary form of values to a byte array.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func integer<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func raw(_ data: some Collection<UInt8>) { bytes.append(contentsOf: data) }

    /// The 16 bytes of a UUID.
    mutating func uuid(_ uuid: UUID) {
        withUnsafeBytes(of: uuid.uuid) { bytes.append(contentsOf: $0) }
    }

    /// A length-prefixed (u32) byte string.
    mutating func data(_ data: [UInt8]) {
        integer(UInt32(data.count))
        bytes.append(contentsOf: data)
    }

    /// A length-prefixed (u32) UTF-8 string, copied straight from the string's storage.
    mutating func string(_ text: String) {
        integer(UInt32(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    mutating func optionalString(_ text: String?) {
        integer(UInt8(text == nil ? 0 : 1))
        if let text { string(text) }
    }
}

/// Reads what ``ByteWriter`` wrote, from bytes that are hostile until
/// read: every read is bounds-checked once and fails with the offset and a
/// reason instead of trapping, and a count read from the bytes is checked
/// against what is left before anything is allocated for it
/// (``count(_:eachAtLeast:)``). The one reader of the store's binary forms
/// (entry records, checkpoints, payload file references).
package struct ByteReader {
    package struct Failure: Error, CustomStringConvertible {
        var reason: String
        package var description: String { reason }
    }

    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }
    /// Bytes not read yet.
    var remaining: Int { bytes.count - offset }

    mutating func integer<T: FixedWidthInteger>(_: T.Type = T.self) throws(Failure) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw Failure(reason: "truncated at byte \(offset)") }
        defer { offset += size }
        return bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }

    /// A count of items that follow, each taking at least `minimum` bytes:
    /// refused unless that many could fit in what is left (so a forged
    /// count of 2^63 costs nothing and traps nowhere).
    mutating func count<T: FixedWidthInteger & UnsignedInteger>(_: T.Type, eachAtLeast minimum: Int) throws(Failure) -> Int {
        let at = offset
        let value = try integer(T.self)
        guard let count = Int(exactly: value), count <= remaining / max(minimum, 1) else {
            throw Failure(reason: "a count of \(value) at byte \(at), more than the \(remaining) bytes left can hold")
        }
        return count
    }

    /// A date in ms since 1970, within ``EntryMetadata/dateLimits``.
    mutating func date(_ what: String) throws(Failure) -> Int64 {
        let at = offset
        let value = try integer(Int64.self)
        guard EntryMetadata.dateLimits.contains(value) else {
            throw Failure(reason: "\(what) of \(value) ms at byte \(at) is not a time any store writes")
        }
        return value
    }

    /// The next `count` bytes, without copying them.
    mutating func slice(_ count: Int) throws(Failure) -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else { throw Failure(reason: "truncated at byte \(offset)") }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func raw(_ count: Int) throws(Failure) -> [UInt8] { Array(try slice(count)) }

    mutating func data() throws(Failure) -> [UInt8] {
        try raw(try length())
    }

    mutating func string() throws(Failure) -> String {
        let at = offset
        let raw = try slice(try length())
        guard let text = String(checkedUTF8: raw) else { throw Failure(reason: "invalid UTF-8 at byte \(at)") }
        return text
    }

    /// A u32 length, refused where `Int` cannot hold it (32-bit watchOS).
    private mutating func length() throws(Failure) -> Int {
        let at = offset
        let length = try integer(UInt32.self)
        guard let count = Int(exactly: length) else { throw Failure(reason: "a length of \(length) at byte \(at)") }
        return count
    }

    mutating func optionalString() throws(Failure) -> String? {
        switch try integer(UInt8.self) {
        case 0: return nil
        case 1: return try string()
        case let flag: throw Failure(reason: "presence flag \(flag) at byte \(offset - 1)")
        }
    }

    /// Fails if bytes are left: a record holds exactly what was written.
    func expectEnd() throws(Failure) {
        guard isAtEnd else { throw Failure(reason: "\(bytes.count - offset) unexpected byte(s) at byte \(offset)") }
    }
}
