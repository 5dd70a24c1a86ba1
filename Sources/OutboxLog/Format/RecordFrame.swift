/// What a record means.
public enum RecordKind: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// A key's value. Replaces any earlier value *and* annotation of the key.
    case value = 1
    /// A small mutable side record attached to the key's current value (its
    /// delivery state, say): replaces the previous annotation, never the
    /// value, and dies with the value.
    case annotation = 2
    /// Deletes the key's value and annotation.
    case tombstone = 3

    public var description: String {
        switch self {
        case .value: "value"
        case .annotation: "annotation"
        case .tombstone: "tombstone"
        }
    }
}

/// The kind byte of a frame: the public kinds plus the engine's own marker.
package enum FrameKind: UInt8, Sendable, Hashable {
    case value = 1
    case annotation = 2
    case tombstone = 3
    /// A checkpoint the engine writes after a sync at open and at close: no
    /// key, no payload, never indexed. Its durable watermark vouches that
    /// every earlier record was on stable storage, so damage before it can
    /// never be mistaken for a torn tail.
    case marker = 4

    init(_ kind: RecordKind) { self = FrameKind(rawValue: kind.rawValue)! }
}

/// The framing of one record in a segment.
///
/// ```
/// offset size field
///      0    4 CRC-32 of bytes 4..<length, seeded with the segment's salt
///      4    4 length of the whole frame, this header included
///      8    1 kind: 1 value, 2 annotation, 3 tombstone, 4 marker
///      9    1 flags: bit 0 = another record of the same atomic batch follows,
///               bit 1 = this record continues a batch begun earlier
///               (a lone record has neither; LevelDB's FULL/FIRST/MIDDLE/LAST),
///               bit 2 = the record carries an expiry (values and
///               annotations only)
///     10    2 key length k: 1...1024, 0 for markers
///     12    8 sequence number
///     20    8 durable watermark: every record with a smaller or equal
///               sequence number was on stable storage before this one was
///               written (lets recovery tell lost unsynced bytes from rot)
///     28    8 expiry, only with flag bit 2: milliseconds since 1970 (signed)
///   28+e    k key (e = 8 with an expiry, else 0)
/// 28+e+k    … payload (length - 28 - e - k bytes)
/// ```
package enum RecordFrame {
    package static let headerSize = 28
    static let batchContinuesFlag: UInt8 = 1
    static let batchContinuationFlag: UInt8 = 2
    static let expiresFlag: UInt8 = 4
    static let batchFlags = batchContinuesFlag | batchContinuationFlag
    static let knownFlags = batchFlags | expiresFlag
    /// The expiry's size, when a frame has one.
    package static let expirySize = 8

    /// The frame size for a record with the given key and payload sizes.
    @inline(__always)
    static func size(keyCount: Int, payloadCount: Int, expires: Bool = false) -> Int {
        headerSize + (expires ? expirySize : 0) + keyCount + payloadCount
    }

    /// Appends the frame of one record to `buffer`, its payload the bytes of
    /// `payload`.
    package static func append(
        to buffer: inout [UInt8], crcSeed: UInt32, kind: FrameKind, batchContinues: Bool,
        batchContinuation: Bool, sequence: UInt64, durableWatermark: UInt64, key: LogKey, payload: UnsafeRawBufferPointer,
        expiry: Int64? = nil
    ) {
        append(
            to: &buffer, crcSeed: crcSeed, kind: kind, batchContinues: batchContinues, batchContinuation: batchContinuation,
            sequence: sequence, durableWatermark: durableWatermark, key: key, payloadCount: payload.count, expiry: expiry
        ) { $0.append(contentsOf: payload) }
    }

    /// Appends the frame of one record to `buffer`; `appendPayload` appends
    /// exactly `payloadCount` bytes of payload (a gather write's parts, one
    /// by one).
    package static func append(
        to buffer: inout [UInt8], crcSeed: UInt32, kind: FrameKind, batchContinues: Bool,
        batchContinuation: Bool, sequence: UInt64, durableWatermark: UInt64, key: LogKey, payloadCount: Int,
        expiry: Int64? = nil, appendPayload: (inout [UInt8]) -> Void
    ) {
        let start = buffer.count
        let length = size(keyCount: key.count, payloadCount: payloadCount, expires: expiry != nil)
        // The header is built on the stack and appended in one go: this runs
        // for every record, under the log's lock.
        var header: (UInt64, UInt64, UInt64, UInt32) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &header) { raw in
            raw.storeLittleEndian(UInt32(length), at: 4)
            raw[8] = kind.rawValue
            raw[9] = (batchContinues ? batchContinuesFlag : 0) | (batchContinuation ? batchContinuationFlag : 0)
                | (expiry == nil ? 0 : expiresFlag)
            raw.storeLittleEndian(UInt16(key.count), at: 10)
            raw.storeLittleEndian(sequence, at: 12)
            raw.storeLittleEndian(durableWatermark, at: 20)
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[..<headerSize]))
        }
        if let expiry { withUnsafeBytes(of: expiry.littleEndian) { buffer.append(contentsOf: $0) } }
        key.withUnsafeBytes { buffer.append(contentsOf: $0) }
        appendPayload(&buffer)
        assert(buffer.count == start + length, "a payload appended other than the bytes it counted")
        buffer.withUnsafeMutableBytes { raw in
            var crc = CRC32(continuing: crcSeed)
            crc.update(UnsafeRawBufferPointer(rebasing: raw[(start + 4)..<(start + length)]))
            raw.storeLittleEndian(crc.value, at: start)
        }
    }

    /// Whether `frame` — bytes read again to be copied — is still exactly
    /// the frame a scan verified: the whole buffer one frame that verifies
    /// against `crcSeed`, numbered `sequence`. Returns what changed, or `nil`.
    ///
    /// Compaction and salvage scan a segment, then read each record again
    /// to copy it: a bit that flips in between must fail here, or
    /// ``reseal(_:crcSeed:)`` would give the damaged bytes a valid CRC.
    static func reverify(_ frame: UnsafeRawBufferPointer, crcSeed: UInt32, sequence: UInt64) -> LogDamage? {
        switch decode(frame, at: 0, crcSeed: crcSeed, maximumLength: OutboxLog.Configuration.absoluteMaximumRecordSize) {
        case .failure(.incomplete): return .recordCutShort
        case .failure(.invalid(let damage)): return damage
        case .success(let decoded):
            if decoded.length != frame.count { return .lengthChanged(decoded.length) }
            if decoded.sequence != sequence { return .sequenceChanged(decoded.sequence) }
            return nil
        }
    }

    /// Recomputes the CRC of a frame in place for a new salt and makes it a
    /// lone record (compaction copies committed records one by one); an
    /// expiry stays. Call ``reverify(_:crcSeed:sequence:)`` on the bytes first.
    static func reseal(_ frame: UnsafeMutableRawBufferPointer, crcSeed: UInt32) {
        frame[9] &= ~batchFlags
        var crc = CRC32(continuing: crcSeed)
        crc.update(UnsafeRawBufferPointer(rebasing: frame[4...]))
        frame.storeLittleEndian(crc.value, at: 0)
    }

    /// A frame that verified.
    package struct Decoded {
        package var length: Int
        package var kind: FrameKind
        package var batchContinues: Bool
        package var batchContinuation: Bool
        package var sequence: UInt64
        package var durableWatermark: UInt64
        /// Milliseconds since 1970, if the record carries an expiry.
        package var expiry: Int64?
        package var keyRange: Range<Int>
        package var payloadRange: Range<Int>
    }

    package enum DecodeFailure: Error, Equatable {
        /// The bytes end before the frame does: a torn write, or the end of
        /// the data read so far.
        case incomplete
        /// The bytes are not a valid frame, for this reason.
        case invalid(LogDamage)
    }

    /// Decodes and verifies the frame starting at `offset` in `bytes`.
    ///
    /// The length field is trusted only to locate the CRC'd range; if the CRC
    /// fails the frame is `invalid`, whatever its length says.
    @inline(__always)
    package static func decode(
        _ bytes: UnsafeRawBufferPointer, at offset: Int, crcSeed: UInt32, maximumLength: Int
    ) -> Result<Decoded, DecodeFailure> {
        let available = bytes.count - offset
        guard available >= headerSize else { return .failure(.incomplete) }
        // Clamped: on a 32-bit platform a length over 2^31 is implausible, not a trap.
        let length = Int(clamping: bytes.loadLittleEndian(at: offset + 4, as: UInt32.self))
        guard length >= headerSize, length <= maximumLength else {
            return .failure(.invalid(.implausibleLength(UInt64(length))))
        }
        guard length <= available else { return .failure(.incomplete) }
        var crc = CRC32(continuing: crcSeed)
        crc.update(UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + length)]))
        guard crc.value == bytes.loadLittleEndian(at: offset, as: UInt32.self) else {
            return .failure(.invalid(.crcMismatch))
        }
        guard let kind = FrameKind(rawValue: bytes[offset + 8]) else {
            return .failure(.invalid(.unknownKind(bytes[offset + 8])))
        }
        let flags = bytes[offset + 9]
        guard flags & ~knownFlags == 0 else { return .failure(.invalid(.unknownFlags(flags))) }
        let keyCount = Int(bytes.loadLittleEndian(at: offset + 10, as: UInt16.self))
        let expires = flags & expiresFlag != 0
        let keyStart = offset + headerSize + (expires ? expirySize : 0)
        guard keyStart - offset + keyCount <= length else { return .failure(.invalid(.keyBeyondFrame(keyCount))) }
        // Limits Docs/FORMAT.md states: a frame that verifies but breaks
        // one was not written by a writer of this version, and is damage.
        guard keyCount <= LogKey.maximumLength else {
            return .failure(.invalid(.keyTooLong(keyCount)))
        }
        if kind != .marker && keyCount == 0 { return .failure(.invalid(.emptyKey(recordKind: kind.rawValue))) }
        if expires && (kind == .tombstone || kind == .marker) {
            return .failure(.invalid(.expiryOnRecordKind(kind.rawValue)))
        }
        if kind == .tombstone && length != headerSize + keyCount {
            return .failure(.invalid(.tombstoneWithPayload))
        }
        if kind == .marker && length != headerSize {
            return .failure(.invalid(.markerWithKeyOrPayload))
        }
        return .success(
            Decoded(
                length: length, kind: kind, batchContinues: flags & batchContinuesFlag != 0,
                batchContinuation: flags & batchContinuationFlag != 0,
                sequence: bytes.loadLittleEndian(at: offset + 12),
                durableWatermark: bytes.loadLittleEndian(at: offset + 20),
                expiry: expires ? bytes.loadLittleEndian(at: offset + headerSize, as: Int64.self) : nil,
                keyRange: keyStart..<(keyStart + keyCount),
                payloadRange: (keyStart + keyCount)..<(offset + length)))
    }
}
