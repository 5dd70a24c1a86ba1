/// Just enough of the store checkpoint's format (`SCHEDULE`, Docs/STORE-FORMAT.md,
/// "The outbox store's checkpoint") to damage it the way a forger would:
/// where its header fields and its body's counts are, and how to repair
/// both CRCs after a change, so that only the store's value checks (or,
/// sealed, its authentication) stand between the change and the queue.
enum CheckpointBytes {
    /// A header field: its offset and width in bytes.
    struct Field: Sendable, Hashable, CustomStringConvertible {
        var name: String
        var offset: Int
        var width: Int
        var description: String { name }
    }

    static let version = Field(name: "version", offset: 8, width: 2)
    static let flags = Field(name: "flags", offset: 10, width: 2)
    static let headerSize = Field(name: "header size", offset: 12, width: 4)
    static let nextSequence = Field(name: "next sequence", offset: 16, width: 8)
    static let bodySize = Field(name: "body size", offset: 24, width: 8)
    static let positionSequence = Field(name: "position's sequence", offset: 36, width: 8)
    static let positionCount = Field(name: "position's segment count", offset: 44, width: 4)
    static let firstSegmentBase = Field(name: "position's first segment base", offset: 48, width: 8)

    static let headerFields = [version, flags, headerSize, nextSequence, bodySize, positionSequence, firstSegmentBase]

    /// The header's size as the file gives it (0 if it is too short to say).
    static func headerSize(_ bytes: [UInt8]) -> Int {
        bytes.count >= 16 ? Int(read(bytes, at: 12, width: 4)) : 0
    }

    /// `value` cut to the field's width, written little-endian.
    static func write(_ value: UInt64, _ field: Field, in bytes: inout [UInt8]) {
        guard field.offset + field.width <= bytes.count else { return }
        for index in 0..<field.width { bytes[field.offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
    }

    static func read(_ bytes: [UInt8], at offset: Int, width: Int) -> UInt64 {
        guard offset + width <= bytes.count else { return 0 }
        return (0..<width).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }

    /// Recomputes the body's CRC (in the header) and the header's, for a
    /// header of `headerSize` bytes (the size before any damage).
    static func repairCRCs(_ bytes: inout [UInt8], headerSize: Int) {
        guard headerSize >= 40, headerSize <= bytes.count else { return }
        let body = CRC32.checksum(bytes[headerSize...])
        for index in 0..<4 { bytes[32 + index] = UInt8(truncatingIfNeeded: body >> (8 * UInt32(index))) }
        let header = CRC32.checksum(bytes[0..<(headerSize - 4)])
        for index in 0..<4 { bytes[headerSize - 4 + index] = UInt8(truncatingIfNeeded: header >> (8 * UInt32(index))) }
    }

    /// The counts of a plain body, as fields of the whole file: the names,
    /// entries and completions, and each entry's dependencies. Empty if
    /// the body does not walk (it is sealed, or not a checkpoint's).
    static func counts(_ bytes: [UInt8]) -> [Field] {
        let start = headerSize(bytes)
        guard bytes.count >= 12, read(bytes, at: 10, width: 2) & 1 == 0, start > 0, start < bytes.count else { return [] }
        var walker = Walker(bytes: bytes, offset: start)
        var fields = [Field(name: "name count", offset: start, width: 4)]
        guard let names = walker.integer(4) else { return [] }
        for _ in 0..<names {
            guard walker.skip(4), walker.string() else { return fields }
        }
        fields.append(Field(name: "entry count", offset: walker.offset, width: 8))
        guard let entries = walker.integer(8), entries < 1 << 20 else { return fields }
        for _ in 0..<entries {
            guard walker.skip(63), let flags = walker.integer(1) else { return fields }
            if flags & 2 != 0 {
                fields.append(Field(name: "dependency count", offset: walker.offset, width: 2))
                guard let count = walker.integer(2), walker.skip(16 * Int(count)) else { return fields }
            }
            if flags & 4 != 0, !walker.string() { return fields }
            if flags & 8 != 0, !walker.failures() { return fields }
            if flags & 16 != 0, !walker.skip(16) { return fields }
        }
        fields.append(Field(name: "completion count", offset: walker.offset, width: 8))
        return fields
    }

    private struct Walker {
        let bytes: [UInt8]
        var offset: Int

        mutating func integer(_ width: Int) -> UInt64? {
            guard offset + width <= bytes.count else { return nil }
            defer { offset += width }
            return CheckpointBytes.read(bytes, at: offset, width: width)
        }

        mutating func skip(_ count: Int) -> Bool {
            guard count >= 0, offset + count <= bytes.count else { return false }
            offset += count
            return true
        }

        mutating func string() -> Bool {
            guard let length = integer(4) else { return false }
            return skip(Int(length))
        }

        /// An entry's failures: field mask; the last failure (cause, a
        /// dependency's fate and parent, status, optional message); two
        /// optional times.
        mutating func failures() -> Bool {
            guard let present = integer(1) else { return false }
            if present & 1 != 0 {
                guard let cause = integer(1), cause != 13 || skip(17), skip(4), let hasMessage = integer(1) else { return false }
                if hasMessage != 0, !string() { return false }
            }
            for bit in [2, 4] as [UInt64] where present & bit != 0 { guard skip(8) else { return false } }
            return true
        }
    }
}
