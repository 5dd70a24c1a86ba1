/// Everything a scan learned about one segment file.
package struct SegmentAnalysis {
    /// The valid records from the start of the file.
    package var leading: SegmentScanner.Run
    /// What follows the first bad frame, if there is one.
    package var damage: Damage?

    package struct Damage {
        /// Where the leading run ends: the truncation point of a torn tail.
        package var offset: Int64
        /// The damaged frame (see ``SegmentScanner/Stop/frame``): where
        /// damage that is not a torn tail is reported.
        var frameOffset: Int64
        var damage: LogDamage
        /// Committed frames (markers included) that verified *after* the damage.
        var recordsAfter = 0
        /// Of those, the records: what a torn tail makes unreachable.
        var dataRecordsAfter = 0
        /// The largest durable watermark among those records: if it reaches
        /// the first lost sequence number, the damaged bytes had been synced
        /// and this is rot, not a crash.
        var maximumWatermarkAfter: UInt64 = 0
        /// The highest sequence number of any verified frame after the damage.
        var highestSequenceAfter: UInt64?
        /// The damaged byte ranges.
        package var skipped: [RecoveryReport.SkippedRange] = []
        /// Every byte from the damage to the end of the file is zero, and
        /// the damage begins at a frame boundary (no batch open): space the
        /// writer allocated ahead and never wrote (Docs/FORMAT.md, "Space
        /// allocated ahead"). Only the newest appended segment may end so;
        /// in any other it is damage like any other.
        var isZeroTail = false
    }

    /// The first sequence number the damage may have destroyed.
    func firstLostSequence(base: UInt64) -> UInt64 {
        (leading.lastSequence ?? (base &- 1)) &+ 1
    }

    /// Scans a whole segment: the leading run first (its records go to
    /// `visit`), then, past any damage, every later run (their records go to
    /// `visitLater`, if given), resynchronising after each bad stretch.
    package static func analyze(
        _ scanner: SegmentScanner, file: String,
        visit: (ScannedRecord) -> Void, visitLater: (ScannedRecord) -> Void = { _ in }
    ) throws(OutboxLogError) -> SegmentAnalysis {
        let leading = try scanner.scanRun(
            from: Int64(SegmentHeader.size), previous: nil, resumingAfterDamage: false, visit: visit)
        guard let stop = leading.stop else { return SegmentAnalysis(leading: leading, damage: nil) }

        var damage = Damage(offset: stop.offset, frameOffset: stop.frame, damage: stop.damage)
        if stop.offset == stop.frame, try scanner.isZero(from: stop.frame) {
            damage.isZeroTail = true
            damage.damage = .zeroTail
            damage.skipped = [
                RecoveryReport.SkippedRange(
                    file: file, offset: stop.frame, bytes: scanner.fileSize - stop.frame, damage: .zeroTail)
            ]
            return SegmentAnalysis(leading: leading, damage: damage)
        }
        var current = stop
        var previous = leading.lastSequence
        while true {
            // The search starts after the damaged frame: the frames of its
            // batch before it (if any) are all continuations of that batch.
            let next = try scanner.resynchronize(after: current.frame, previous: previous)
            damage.skipped.append(
                RecoveryReport.SkippedRange(
                    file: file, offset: current.frame, bytes: (next ?? scanner.fileSize) - current.frame,
                    damage: current.damage))
            if current.frame > current.offset {
                damage.skipped.append(
                    RecoveryReport.SkippedRange(
                        file: file, offset: current.offset, bytes: current.frame - current.offset,
                        damage: .discardedWithBatch(damagedFrameAt: current.frame)))
            }
            guard let next else { break }
            var dataRecords = 0
            let run = try scanner.scanRun(from: next, previous: previous, resumingAfterDamage: true) { record in
                if record.kind != .marker { dataRecords += 1 }
                visitLater(record)
            }
            damage.dataRecordsAfter += dataRecords
            if run.orphanBytes > 0 {
                damage.skipped.append(
                    RecoveryReport.SkippedRange(file: file, offset: next, bytes: run.orphanBytes, damage: .batchStartLost))
            }
            damage.recordsAfter += run.records
            damage.maximumWatermarkAfter = max(damage.maximumWatermarkAfter, run.maximumWatermark)
            if let last = run.lastSequence {
                damage.highestSequenceAfter = max(damage.highestSequenceAfter ?? 0, last)
                previous = last
            }
            guard var nextStop = run.stop else { break }
            // Never loop on the same bytes: a run always moves past `next`.
            nextStop.frame = max(nextStop.frame, next)
            current = nextStop
        }
        return SegmentAnalysis(leading: leading, damage: damage)
    }
}
