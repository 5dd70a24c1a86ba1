/// Segment and intent bytes for the test vectors, written from
/// Docs/FORMAT.md rather than by the engine's encoder, so a vector can hold
/// exactly the bytes a case needs (a field damaged and the CRC made valid
/// again, say).
struct VectorSegment {
    /// One record frame, its fields as FORMAT.md names them.
    struct Frame {
        var kind: UInt8
        var flags: UInt8
        var sequence: UInt64
        var watermark: UInt64
        /// Written (8 bytes before the key) whenever set, whatever the
        /// flags say, so a case can pair them wrongly.
        var expiry: Int64? = nil
        var key: [UInt8]
        var payload: [UInt8]

        var size: Int { 28 + (expiry == nil ? 0 : 8) + key.count + payload.count }
    }

    /// The header's 48 bytes (its CRC is recomputed by ``encoded()``).
    var header: [UInt8]
    var frames: [Frame]

    var base: UInt64 { VectorBytes.load(header, at: 16) }
    var salt: UInt64 {
        get { VectorBytes.load(header, at: 32) }
        set { VectorBytes.store(newValue, into: &header, at: 32) }
    }

    /// Parses a segment the engine wrote and closed cleanly (every frame
    /// verifies, so lengths can be trusted).
    init(parsing bytes: [UInt8]) {
        header = Array(bytes[0..<48])
        frames = []
        var offset = 48
        while offset + 28 <= bytes.count {
            let length = Int(VectorBytes.load(bytes, at: offset + 4) as UInt32)
            let keyCount = Int(VectorBytes.load(bytes, at: offset + 10) as UInt16)
            let expires = bytes[offset + 9] & 4 != 0
            let keyStart = offset + (expires ? 36 : 28)
            frames.append(
                Frame(
                    kind: bytes[offset + 8], flags: bytes[offset + 9], sequence: VectorBytes.load(bytes, at: offset + 12),
                    watermark: VectorBytes.load(bytes, at: offset + 20),
                    expiry: expires ? VectorBytes.load(bytes, at: offset + 28) : nil,
                    key: Array(bytes[keyStart..<(keyStart + keyCount)]),
                    payload: Array(bytes[(keyStart + keyCount)..<(offset + length)])))
            offset += length
        }
    }

    /// The file: the header with its CRC recomputed, each frame with a valid CRC for `salt`.
    func encoded() -> [UInt8] {
        var bytes = header
        VectorBytes.store(VectorBytes.crc32(bytes[0..<44]), into: &bytes, at: 44)
        for frame in frames { bytes += Self.encode(frame, salt: salt) }
        return bytes
    }

    /// Where frame `index` starts in ``encoded()``.
    func offset(ofFrame index: Int) -> Int {
        48 + frames[..<index].reduce(0) { $0 + $1.size }
    }

    static func encode(_ frame: Frame, salt: UInt64) -> [UInt8] {
        var body = [UInt8](repeating: 0, count: 24)
        VectorBytes.store(UInt32(frame.size), into: &body, at: 0)
        body[4] = frame.kind
        body[5] = frame.flags
        VectorBytes.store(UInt16(truncatingIfNeeded: frame.key.count), into: &body, at: 6)
        VectorBytes.store(frame.sequence, into: &body, at: 8)
        VectorBytes.store(frame.watermark, into: &body, at: 16)
        if let expiry = frame.expiry {
            var bytes = [UInt8](repeating: 0, count: 8)
            VectorBytes.store(expiry, into: &bytes, at: 0)
            body += bytes
        }
        body += frame.key + frame.payload
        var saltBytes = [UInt8](repeating: 0, count: 8)
        VectorBytes.store(salt, into: &saltBytes, at: 0)
        let seed = VectorBytes.crc32(saltBytes[...])
        var crc = [UInt8](repeating: 0, count: 4)
        VectorBytes.store(VectorBytes.crc32(body[...], continuing: seed), into: &crc, at: 0)
        return crc + body
    }
}

enum VectorBytes {
    static func load<T: FixedWidthInteger>(_ bytes: [UInt8], at offset: Int) -> T {
        var value: T = 0
        for index in 0..<(T.bitWidth / 8) { value |= T(bytes[offset + index]) << (8 * index) }
        return value
    }

    static func store<T: FixedWidthInteger>(_ value: T, into bytes: inout [UInt8], at offset: Int) {
        for index in 0..<(T.bitWidth / 8) { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    /// zlib's `crc32(previous, bytes)`, bit by bit (vectors are small).
    static func crc32(_ bytes: ArraySlice<UInt8>, continuing previous: UInt32 = 0) -> UInt32 {
        var crc = ~previous
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// A `COMPACTION` file: inputs and outputs as (base, salt).
    static func intent(inputs: [(UInt64, UInt64)], outputs: [(UInt64, UInt64)], version: UInt16 = 1) -> [UInt8] {
        var bytes = Array("OBXCMPT\n".utf8) + [UInt8](repeating: 0, count: 12)
        store(version, into: &bytes, at: 8)
        store(UInt32(inputs.count), into: &bytes, at: 12)
        store(UInt32(outputs.count), into: &bytes, at: 16)
        for (base, salt) in inputs + outputs {
            var pair = [UInt8](repeating: 0, count: 16)
            store(base, into: &pair, at: 0)
            store(salt, into: &pair, at: 8)
            bytes += pair
        }
        var crc = [UInt8](repeating: 0, count: 4)
        store(crc32(bytes[...]), into: &crc, at: 0)
        return bytes + crc
    }

    /// `00000000000000000042.seg`
    static func segmentName(_ base: UInt64) -> String {
        let digits = String(base)
        return String(repeating: "0", count: 20 - digits.count) + digits + ".seg"
    }
}
