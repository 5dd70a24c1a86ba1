import OutboxLog
/// The frame decoder at the end of the bytes it is given: a frame whose
/// declared length runs past them — by one byte, above all — must be
/// `incomplete`, and must be found so without reading a byte past them.
///
/// Random mutation rarely makes a frame that ends exactly one byte past its
/// input, so the frame target and `FrameBoundaryTests` build such cuts from
/// frames that verify. Each cut is decoded from an allocation of exactly its
/// size: a read past it is a read past the allocation, which
/// AddressSanitizer reports (the checksum's reads too: Sources/CZlib/shim.h).
extension LogFormatFuzzing {
    /// Decodes the frame of `length` bytes at `offset` in `bytes` — one that
    /// verified — cut to each count of its bytes in `kept` (those below
    /// `length`), and throws unless every cut is `incomplete`. A few bytes
    /// before the frame are kept, so it is decoded at an offset, as in a
    /// segment.
    package static func checkCutShort(
        _ bytes: UnsafeRawBufferPointer, frameAt offset: Int, length: Int, crcSeed: UInt32,
        maximumLength: Int = OutboxLog.Configuration.absoluteMaximumRecordSize, keeping kept: some Sequence<Int>
    ) throws(FuzzViolation) {
        let start = offset - min(offset, 8)
        for keep in kept where keep >= 0 && keep < length {
            let cut = UnsafeRawBufferPointer(rebasing: bytes[start..<(offset + keep)])
            try withMutableCopy(of: cut) { (copy) throws(FuzzViolation) in
                let result = RecordFrame.decode(
                    UnsafeRawBufferPointer(copy), at: offset - start, crcSeed: crcSeed, maximumLength: maximumLength)
                if case .failure(.incomplete) = result { return }
                throw FuzzViolation(
                    "the \(length)-byte frame at \(offset), cut to its first \(keep) bytes: \(describe(result)), not incomplete")
            }
        }
    }

    /// The cuts the frame target tries on every frame that verifies: one to
    /// eight bytes short, and around the end of the header.
    static func boundaryCuts(of length: Int) -> [Int] {
        Array((max(0, length - 8)..<length).reversed()) + [RecordFrame.headerSize, RecordFrame.headerSize - 1, 0]
    }

    /// The frames of a segment file that verify, in order, up to the first
    /// that does not (or none, if its header does not decode), with the
    /// seed their checksums use.
    package static func verifiedFrames(inSegment bytes: UnsafeRawBufferPointer) -> (crcSeed: UInt32, frames: [Range<Int>]) {
        guard case .success(let header) = SegmentHeader.decode(bytes) else { return (0, []) }
        let crcSeed = header.recordCRCSeed
        var frames: [Range<Int>] = []
        var offset = SegmentHeader.size
        let maximum = OutboxLog.Configuration.absoluteMaximumRecordSize
        while case .success(let frame) = RecordFrame.decode(bytes, at: offset, crcSeed: crcSeed, maximumLength: maximum) {
            frames.append(offset..<(offset + frame.length))
            offset += frame.length
        }
        return (crcSeed, frames)
    }

    static func describe(_ result: Result<RecordFrame.Decoded, RecordFrame.DecodeFailure>) -> String {
        switch result {
        case .success(let frame): "decoded as a whole \(frame.length)-byte frame"
        case .failure(.incomplete): "incomplete"
        case .failure(.invalid(let reason)): "invalid (\(reason))"
        }
    }
}
