import OutboxLog
/// Fuzz entry points for the fixed-layout parts of the format: a record
/// frame, a segment header, a compaction intent. Each decodes arbitrary
/// bytes and throws ``FuzzViolation`` if what it decoded is not exactly what
/// the bytes say: a decoded frame, header or intent must encode back to the
/// very bytes it came from.
///
/// Control byte (the input's first byte): bit 0 repairs the checksum before
/// decoding, so the fuzzer also explores what lies behind the CRC check;
/// the other bits choose offsets and limits, per target.
package enum LogFormatFuzzing {
    /// The salt the frame target's records are checksummed with.
    package static let frameSalt: UInt64 = 0x5EED_0F_F022_1E55
    package static var frameCRCSeed: UInt32 { SegmentHeader(baseSequence: 0, coverEnd: nil, salt: frameSalt).recordCRCSeed }

    // MARK: Frame

    /// `RecordFrame.decode` at an offset the control byte picks (bits 2…7),
    /// with the engine's maximum record size or, if bit 1 is set, a small one.
    /// A frame that verifies is decoded again cut short at its boundaries
    /// (FrameBoundaryFuzzing.swift).
    package static func frame(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        guard let input = FuzzInput(input) else { return }
        let offset = Int(input.control >> 2) % (input.data.count + 1)
        let maximumLength = input.flag(1) ? 64 : OutboxLog.Configuration.absoluteMaximumRecordSize
        guard input.flag(0) else {
            return try checkFrame(input.data, at: offset, crcSeed: frameCRCSeed, maximumLength: maximumLength)
        }
        try withMutableCopy(of: input.data) { (bytes) throws(FuzzViolation) in
            repairFrameCRC(bytes, at: offset, crcSeed: frameCRCSeed, maximumLength: maximumLength)
            try checkFrame(UnsafeRawBufferPointer(bytes), at: offset, crcSeed: frameCRCSeed, maximumLength: maximumLength)
        }
    }

    /// Decodes the frame at `offset` and holds the result to the bytes.
    static func checkFrame(
        _ bytes: UnsafeRawBufferPointer, at offset: Int, crcSeed: UInt32, maximumLength: Int
    ) throws(FuzzViolation) {
        let available = bytes.count - offset
        let result = RecordFrame.decode(bytes, at: offset, crcSeed: crcSeed, maximumLength: maximumLength)
        // A plausible length that runs past the bytes is a frame cut short,
        // whatever the bytes there say (a torn tail, not damage).
        if available >= RecordFrame.headerSize, case let declared = declaredLength(bytes, at: offset),
            declared >= RecordFrame.headerSize, declared <= maximumLength, declared > available
        {
            guard case .failure(.incomplete) = result else {
                throw FuzzViolation("frame at \(offset): its length \(declared) runs past the \(available) bytes there, yet it is \(describe(result))")
            }
        }
        switch result {
        case .success(let frame):
            try checkDecoded(frame, in: bytes, at: offset, crcSeed: crcSeed)
            try checkCutShort(
                bytes, frameAt: offset, length: frame.length, crcSeed: crcSeed, maximumLength: maximumLength,
                keeping: boundaryCuts(of: frame.length))
        case .failure(.incomplete):
            // Only a frame that really extends past the bytes is incomplete.
            guard available < RecordFrame.headerSize || declaredLength(bytes, at: offset) > available else {
                throw FuzzViolation("frame at \(offset): called incomplete, but all \(declaredLength(bytes, at: offset)) bytes are there")
            }
        case .failure(.invalid):
            break
        }
    }

    /// A decoded frame lies inside the bytes, its key and payload tile it,
    /// and encoding its fields again gives back exactly its bytes.
    static func checkDecoded(
        _ frame: RecordFrame.Decoded, in bytes: UnsafeRawBufferPointer, at offset: Int, crcSeed: UInt32
    ) throws(FuzzViolation) {
        let end = offset + frame.length
        guard frame.length >= RecordFrame.headerSize, end <= bytes.count,
            frame.keyRange.lowerBound == offset + RecordFrame.headerSize + (frame.expiry == nil ? 0 : RecordFrame.expirySize),
            frame.keyRange.upperBound == frame.payloadRange.lowerBound, frame.payloadRange.upperBound == end
        else {
            throw FuzzViolation(
                "frame at \(offset) of \(bytes.count) bytes: length \(frame.length), key \(frame.keyRange), payload \(frame.payloadRange)")
        }
        var encoded: [UInt8] = []
        RecordFrame.append(
            to: &encoded, crcSeed: crcSeed, kind: frame.kind, batchContinues: frame.batchContinues,
            batchContinuation: frame.batchContinuation, sequence: frame.sequence,
            durableWatermark: frame.durableWatermark, key: LogKey(UnsafeRawBufferPointer(rebasing: bytes[frame.keyRange])),
            payload: UnsafeRawBufferPointer(rebasing: bytes[frame.payloadRange]), expiry: frame.expiry)
        guard encoded.elementsEqual(bytes[offset..<end]) else {
            throw FuzzViolation("frame at \(offset): decoded as \(frame), which encodes to different bytes")
        }
    }

    static func declaredLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        Int(bytes.loadLittleEndian(at: offset + 4, as: UInt32.self))
    }

    /// Rewrites the CRC of the frame at `offset`, if its declared length fits.
    static func repairFrameCRC(_ bytes: UnsafeMutableRawBufferPointer, at offset: Int, crcSeed: UInt32, maximumLength: Int) {
        guard bytes.count - offset >= RecordFrame.headerSize else { return }
        let length = declaredLength(UnsafeRawBufferPointer(bytes), at: offset)
        guard length >= RecordFrame.headerSize, length <= maximumLength, length <= bytes.count - offset else { return }
        var crc = CRC32(continuing: crcSeed)
        crc.update(UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + length)]))
        bytes.storeLittleEndian(crc.value, at: offset)
    }

    // MARK: Segment header

    /// `SegmentHeader.decode` on the start of a file.
    package static func segmentHeader(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        guard let input = FuzzInput(input) else { return }
        guard input.flag(0) else { return try checkHeader(input.data) }
        try withMutableCopy(of: input.data) { (bytes) throws(FuzzViolation) in
            repairHeaderCRC(bytes)
            try checkHeader(UnsafeRawBufferPointer(bytes))
        }
    }

    static func checkHeader(_ bytes: UnsafeRawBufferPointer) throws(FuzzViolation) {
        switch SegmentHeader.decode(bytes) {
        case .success(let header):
            guard header.encoded().elementsEqual(bytes.prefix(SegmentHeader.size)) else {
                throw FuzzViolation("segment header decoded as \(header), which encodes to different bytes")
            }
        case .failure(.unsupportedVersion(let version)):
            // Only a header that verifies may claim a newer version.
            let declared = Int(bytes.loadLittleEndian(at: 10, as: UInt16.self))
            guard version != SegmentHeader.currentVersion, declared >= 16, declared <= bytes.count,
                bytes.loadLittleEndian(at: declared - 4, as: UInt32.self)
                    == CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<(declared - 4)]))
            else { throw FuzzViolation("segment header: version \(version) reported for a header that does not verify") }
        case .failure:
            break
        }
    }

    /// Rewrites the header's CRC where the decoder will look for it: at 44
    /// for the current version, in the last 4 bytes of the declared size otherwise.
    static func repairHeaderCRC(_ bytes: UnsafeMutableRawBufferPointer) {
        guard bytes.count >= 12 else { return }
        let version = UnsafeRawBufferPointer(bytes).loadLittleEndian(at: 8, as: UInt16.self)
        let end = version == SegmentHeader.currentVersion
            ? SegmentHeader.size : Int(UnsafeRawBufferPointer(bytes).loadLittleEndian(at: 10, as: UInt16.self))
        guard end >= 16, end <= bytes.count else { return }
        bytes.storeLittleEndian(CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<(end - 4)])), at: end - 4)
    }

    // MARK: Compaction intent

    /// `CompactionIntent.decode` on a whole `COMPACTION` file.
    package static func compactionIntent(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        guard let input = FuzzInput(input) else { return }
        var bytes = Array(input.data)
        if input.flag(0), bytes.count >= 4 {
            let crc = CRC32.checksum(bytes[..<(bytes.count - 4)])
            bytes.withUnsafeMutableBytes { $0.storeLittleEndian(crc, at: $0.count - 4) }
        }
        if case .success(let intent) = CompactionIntent.decode(bytes), intent.encoded() != bytes {
            throw FuzzViolation("compaction intent decoded as \(intent), which encodes to different bytes")
        }
    }
}
