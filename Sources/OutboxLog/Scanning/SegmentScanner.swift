import SystemPackage

/// A committed record found by a scan: its frame verified, and so did every
/// record of its atomic batch.
package struct ScannedRecord {
    package var kind: FrameKind
    package var key: LogKey
    package var sequence: UInt64
    package var offset: Int64
    package var length: Int
    /// Milliseconds since 1970, if the record carries an expiry.
    package var expiry: Int64?
}

/// Verifies the frames of one segment file, in the manner of LevelDB's
/// `log::Reader`: every CRC is checked, a length is only trusted after its
/// CRC verified, and after a bad frame the scanner *resynchronises* by
/// searching byte by byte for the next frame that verifies, so it can tell a
/// torn tail (nothing valid follows) from damage in the middle (valid
/// records follow, which must never be dropped silently).
package final class SegmentScanner {
    let reader: ChunkedFileReader
    let header: SegmentHeader
    let crcSeed: UInt32

    /// The result of scanning one run of consecutive valid frames.
    package struct Run {
        /// Offset just past the last committed record.
        package var end: Int64
        var records = 0
        var firstSequence: UInt64?
        var lastSequence: UInt64?
        /// The largest durable watermark among the run's frames.
        var maximumWatermark: UInt64 = 0
        /// Why the run ended before the end of the file, or `nil` if it
        /// reached the end cleanly.
        var stop: Stop?
        /// Whether the last committed frame is a marker (a clean close).
        var endsWithMarker = false
        /// Bytes at the start of the run skipped because they belonged to a
        /// batch whose beginning was destroyed.
        var orphanBytes: Int64 = 0

        /// Commits `records` (a lone record, or a whole batch), the last
        /// ending at `end`: each handed to `visit`, in order.
        mutating func commit(
            _ records: some BidirectionalCollection<ScannedRecord>, endingAt end: Int64, visit: (ScannedRecord) -> Void
        ) {
            for record in records { visit(record) }
            self.records += records.count
            if firstSequence == nil { firstSequence = records.first?.sequence }
            if let last = records.last {
                lastSequence = last.sequence
                endsWithMarker = last.kind == .marker
            }
            self.end = end
        }
    }

    struct Stop {
        /// Where committed data ends: the start of the bad frame, or of the
        /// incomplete batch it interrupted (a torn tail is cut here).
        var offset: Int64
        /// Where the damage is reported: the frame that failed (its
        /// decoding or the sequence rules), or, when every frame verified
        /// but a batch is broken, the batch's first frame. At or after
        /// `offset`; the batch's intact frames in between are discarded.
        var frame: Int64
        var damage: LogDamage
    }

    package init(reader: ChunkedFileReader, header: SegmentHeader) {
        self.reader = reader
        self.header = header
        self.crcSeed = header.recordCRCSeed
    }

    var fileSize: Int64 { reader.fileSize }

    /// Scans frames from `offset` until the end of the file or the first bad
    /// frame, calling `visit` with each committed record in order.
    ///
    /// - Parameter previous: the sequence number of the last committed record
    ///   before `offset`, or `nil` at the start of the segment. After a
    ///   resynchronisation the first record may skip sequence numbers (they
    ///   were in the damaged bytes); after that, appended segments must count
    ///   up by one and rewritten segments must increase.
    ///
    /// - Parameter until: asked after each committed record or batch; the
    ///   run ends there, cleanly (``Run/end`` is that frame boundary), once
    ///   it says so. A page of reads stops when it has enough.
    func scanRun(
        from offset: Int64, previous: UInt64?, resumingAfterDamage: Bool, until enough: () -> Bool = { false },
        visit: (ScannedRecord) -> Void
    ) throws(OutboxLogError) -> Run {
        var run = Run(end: offset)
        var position = offset
        var lastFrameSequence = previous
        var allowGap = resumingAfterDamage
        var skippingOrphans = resumingAfterDamage
        var batch: [ScannedRecord] = []
        var batchStart: Int64 = offset
        let maximumLength = OutboxLog.Configuration.absoluteMaximumRecordSize

        /// `frameLevel`: the frame at `position` is at fault; otherwise
        /// the open batch is (every frame of it verified).
        func stop(_ damage: LogDamage, frameLevel: Bool = true) -> Run {
            var result = run
            let committedEnd = batch.isEmpty ? position : batchStart
            result.stop = Stop(offset: committedEnd, frame: frameLevel ? position : committedEnd, damage: damage)
            return result
        }

        while position < fileSize {
            let (decoded, frameBytes): (RecordFrame.Decoded, UnsafeRawBufferPointer)
            switch try frame(at: position, maximumLength: maximumLength) {
            case .frame(let frame, let bytes): (decoded, frameBytes) = (frame, bytes)
            case .damage(let damage): return stop(damage)
            }
            if skippingOrphans {
                if decoded.batchContinuation {
                    // The rest of a batch whose first records were destroyed:
                    // never applied, because the batch is incomplete. One out
                    // of order is the damage itself (checked before it is
                    // skipped, so the search for the next record starts
                    // right after it).
                    if decoded.sequence >= SegmentHeader.sequenceLimit { return stop(.sequenceBeyondLimit(decoded.sequence)) }
                    if let last = lastFrameSequence, decoded.sequence <= last {
                        return stop(.sequenceOutOfOrder(decoded.sequence, previous: last))
                    }
                    position += Int64(decoded.length)
                    run.orphanBytes += Int64(decoded.length)
                    run.end = position
                    lastFrameSequence = decoded.sequence
                    allowGap = true
                    continue
                }
                skippingOrphans = false
            }
            if let damage = sequenceViolation(decoded.sequence, after: lastFrameSequence, allowGap: allowGap) {
                return stop(damage)
            }
            if decoded.batchContinuation != !batch.isEmpty {
                return decoded.batchContinuation
                    ? stop(.continuationWithoutStart) : stop(.batchInterrupted, frameLevel: false)
            }
            allowGap = false
            lastFrameSequence = decoded.sequence
            let record = ScannedRecord(
                kind: decoded.kind,
                key: LogKey(UnsafeRawBufferPointer(rebasing: frameBytes[decoded.keyRange])),
                sequence: decoded.sequence, offset: position, length: decoded.length, expiry: decoded.expiry)
            run.maximumWatermark = max(run.maximumWatermark, decoded.durableWatermark)
            position += Int64(decoded.length)
            if batch.isEmpty && !decoded.batchContinues {
                // A lone record (the common case) commits at once, never
                // copied through the batch buffer: an open scans millions.
                run.commit(CollectionOfOne(record), endingAt: position, visit: visit)
                if enough() { return run }
                continue
            }
            if batch.isEmpty { batchStart = position - Int64(decoded.length) }
            batch.append(record)
            if decoded.batchContinues { continue }
            // A batch's last record: the whole batch commits.
            run.commit(batch, endingAt: position, visit: visit)
            batch.removeAll(keepingCapacity: true)
            if enough() { return run }
        }
        if !batch.isEmpty { return stop(.batchCut, frameLevel: false) }
        return run
    }

    /// A frame read at a position: decoded, with its bytes (valid until the
    /// reader's next window); or the damage that stops the run there.
    private enum FrameRead {
        case frame(RecordFrame.Decoded, UnsafeRawBufferPointer)
        case damage(LogDamage)
    }

    private func frame(at position: Int64, maximumLength: Int) throws(OutboxLogError) -> FrameRead {
        let head = try reader.window(at: position, count: RecordFrame.headerSize)
        guard head.count == RecordFrame.headerSize else { return .damage(.frameHeaderCut) }
        let declared = Int(clamping: head.loadLittleEndian(at: 4, as: UInt32.self))
        var frameBytes = head
        if declared > RecordFrame.headerSize && declared <= maximumLength {
            frameBytes = try reader.window(at: position, count: declared)
        }
        switch RecordFrame.decode(frameBytes, at: 0, crcSeed: crcSeed, maximumLength: maximumLength) {
        case .success(let frame): return .frame(frame, frameBytes)
        case .failure(.incomplete): return .damage(.frameCut)
        case .failure(.invalid(let damage)): return .damage(damage)
        }
    }

    private func sequenceViolation(_ sequence: UInt64, after previous: UInt64?, allowGap: Bool) -> LogDamage? {
        guard sequence < SegmentHeader.sequenceLimit else { return .sequenceBeyondLimit(sequence) }
        if let coverEnd = header.coverEnd {
            if sequence < header.baseSequence || sequence >= coverEnd {
                return .sequenceOutsideSegment(sequence, segment: header.baseSequence..<max(coverEnd, header.baseSequence))
            }
            if let previous, sequence <= previous { return .sequenceOutOfOrder(sequence, previous: previous) }
            return nil
        }
        guard let previous else {
            return sequence == header.baseSequence || (allowGap && sequence > header.baseSequence)
                ? nil : .firstSequenceNotBase(sequence, base: header.baseSequence)
        }
        if sequence == previous &+ 1 || (allowGap && sequence > previous) { return nil }
        return .sequenceOutOfOrder(sequence, previous: previous)
    }

    /// Whether every byte from `offset` to the end of the file is zero.
    func isZero(from offset: Int64) throws(OutboxLogError) -> Bool {
        var position = offset
        while position < fileSize {
            let count = Int(min(Int64(64 << 10), fileSize - position))
            let window = try reader.window(at: position, count: count)
            guard window.count == count else { return false }
            // A word at a time: a segment's unwritten end is megabytes.
            var index = 0
            while index + 8 <= count {
                if window.loadUnaligned(fromByteOffset: index, as: UInt64.self) != 0 { return false }
                index += 8
            }
            while index < count {
                if window[index] != 0 { return false }
                index += 1
            }
            position += Int64(count)
        }
        return true
    }

    /// The offset of the next frame after `offset` that verifies and whose
    /// sequence number is greater than `previous`, or `nil` if none does.
    func resynchronize(after offset: Int64, previous: UInt64?) throws(OutboxLogError) -> Int64? {
        let maximumLength = OutboxLog.Configuration.absoluteMaximumRecordSize
        let floor = previous ?? (header.baseSequence &- 1)
        var candidate = offset + 1
        while candidate + Int64(RecordFrame.headerSize) <= fileSize {
            let head = try reader.window(at: candidate, count: RecordFrame.headerSize)
            // Cheap plausibility checks first; the CRC decides.
            let length = Int(clamping: head.loadLittleEndian(at: 4, as: UInt32.self))
            let kind = head[8]
            let flags = head[9]
            let keyCount = Int(head.loadLittleEndian(at: 10, as: UInt16.self))
            let sequence: UInt64 = head.loadLittleEndian(at: 12)
            if length >= RecordFrame.headerSize, length <= maximumLength,
                Int64(length) <= fileSize - candidate, (1...4).contains(kind),
                flags & ~RecordFrame.knownFlags == 0, RecordFrame.headerSize + keyCount <= length,
                sequence > floor, sequence < SegmentHeader.sequenceLimit
            {
                let frame = try reader.window(at: candidate, count: length)
                if case .success = RecordFrame.decode(frame, at: 0, crcSeed: crcSeed, maximumLength: maximumLength) {
                    return candidate
                }
            }
            candidate += 1
        }
        return nil
    }
}
