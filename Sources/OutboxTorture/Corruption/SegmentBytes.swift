/// Just enough of the on-disk format (Docs/FORMAT.md) to damage a segment
/// the way a careless tool or a failing disk would: where its records are,
/// and how to rewrite its header consistently.
enum SegmentBytes {
    static let headerSize = 48
    static let frameHeaderSize = 28

    /// The segment base sequence in a file name, or `nil` if it is no segment.
    static func base(ofName name: String) -> UInt64? {
        guard name.hasSuffix(".seg"), name.count == 24 else { return nil }
        return UInt64(name.prefix(20))
    }

    static func name(base: UInt64) -> String {
        let digits = String(base)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".seg"
    }

    /// The frames of a segment, as byte ranges, up to the first one whose
    /// declared length does not fit (no CRC check: a damage tool need not
    /// be right).
    static func frames(in bytes: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var offset = headerSize
        while offset + frameHeaderSize <= bytes.count {
            let length = Int(readUInt32(bytes, at: offset + 4))
            guard length >= frameHeaderSize, offset + length <= bytes.count else { break }
            ranges.append(offset..<offset + length)
            offset += length
        }
        return ranges
    }

    /// Rewrites the header's base sequence and recomputes its CRC, so the
    /// header verifies: a copy that looks like a genuine segment.
    static func setBase(_ base: UInt64, in bytes: inout [UInt8]) {
        guard bytes.count >= headerSize else { return }
        for index in 0..<8 { bytes[16 + index] = UInt8(truncatingIfNeeded: base >> (8 * UInt64(index))) }
        let crc = CRC32.checksum(bytes[0..<44])
        for index in 0..<4 { bytes[44 + index] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(index))) }
    }

    static func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }
}

/// CRC-32 (IEEE, zlib's), bit by bit: only headers are checksummed here.
enum CRC32 {
    static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
