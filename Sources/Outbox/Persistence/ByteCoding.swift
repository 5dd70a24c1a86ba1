/// Appends the little-endian binary form of values to a byte array.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func integer<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func raw(_ data: some Collection<UInt8>) { bytes.append(contentsOf: data) }

    /// A length-prefixed (u32) byte string.
    mutating func data(_ data: [UInt8]) {
        integer(UInt32(data.count))
        bytes.append(contentsOf: data)
    }

    mutating func string(_ text: String) { data(Array(text.utf8)) }

    mutating func optionalString(_ text: String?) {
        integer(UInt8(text == nil ? 0 : 1))
        if let text { string(text) }
    }
}

/// Reads what ``ByteWriter`` wrote; every read is bounds-checked and fails
/// with a clear reason instead of trapping.
struct ByteReader {
    struct Failure: Error { var reason: String }

    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func integer<T: FixedWidthInteger>(_: T.Type = T.self) throws(Failure) -> T {
        let size = MemoryLayout<T>.size
        guard offset + size <= bytes.count else { throw Failure(reason: "truncated at byte \(offset)") }
        var value = T.zero
        withUnsafeMutableBytes(of: &value) { target in
            for index in 0..<size { target[index] = bytes[offset + index] }
        }
        offset += size
        return T(littleEndian: value)
    }

    mutating func raw(_ count: Int) throws(Failure) -> [UInt8] {
        guard count >= 0, offset + count <= bytes.count else { throw Failure(reason: "truncated at byte \(offset)") }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func data() throws(Failure) -> [UInt8] {
        try raw(Int(try integer(UInt32.self)))
    }

    mutating func string() throws(Failure) -> String {
        let raw = try data()
        guard let text = String(checkedUTF8: raw) else { throw Failure(reason: "invalid UTF-8") }
        return text
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
