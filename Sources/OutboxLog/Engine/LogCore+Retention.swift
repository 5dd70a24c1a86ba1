import Foundation

/// Retention: the oldest segments whose every value and annotation has
/// expired (or, asked by position, whose every record is older than a
/// sequence number) are removed whole, through the same crash-safe swap as
/// compaction (an intent with inputs and no outputs).
///
/// Why whole segments, oldest first: removing a file costs nothing per
/// record, and a tombstone can only shadow records older than itself, all
/// of which are in the segments removed with it or before it. A segment
/// that holds a record without an expiry stays, and so does every segment
/// after it: retention never reorders what a reader sees.
extension LogCore {
    func removeExpired(now: Int64, below floor: UInt64) async throws(OutboxLogError) -> RetentionReport {
        if configuration.readOnly { throw OutboxLogError(.invalidArgument, "the log was opened read-only") }
        try await waitForIndex()
        try await claimCompactionSlot()
        // A quiet log's active segment may hold nothing but expired records:
        // sealed, it can go too, and the new (empty) one carries the
        // sequence floor.
        // Only when every segment before it goes too (and the floor is past
        // every record): otherwise each call would roll a new segment that
        // retention cannot reach.
        let everySealedExpired = state.withLock { state in
            state.nextSequence <= floor
                && Self.removableRun(in: state, expiredAt: now, below: floor).count == state.order.count - 1
        }
        do {
            if everySealedExpired { try await sealActiveSegment(when: { $0.latestExpiry != .min && $0.hasExpired(at: now) }) }
        } catch {
            releaseCompaction()
            throw error
        }
        return try await runOnOwnThread { () throws(OutboxLogError) -> RetentionReport in
            try self.removeRunClaimed { state in Self.removableRun(in: state, expiredAt: now, below: floor) }
        }
    }

    /// Retention by size: the oldest segments, while the log's files
    /// (headers included) hold more than `limit` bytes, each only if its
    /// every record is below `floor`. The newest segment always stays, so a
    /// limit below its size leaves it alone.
    func removeOldestSegments(keepingAtMost limit: Int64, below floor: UInt64) async throws(OutboxLogError) -> RetentionReport {
        if configuration.readOnly { throw OutboxLogError(.invalidArgument, "the log was opened read-only") }
        guard limit >= 0 else { throw OutboxLogError(.invalidArgument, "a size limit is at least 0 bytes, not \(limit)") }
        try await waitForIndex()
        try await claimCompactionSlot()
        return try await runOnOwnThread { () throws(OutboxLogError) -> RetentionReport in
            try self.removeRunClaimed { state in
                var excess = state.order.reduce(Int64(0)) { total, id in
                    total + Int64(SegmentHeader.size) + (state.index.usage[id]?.totalBytes ?? 0)
                } - limit
                return Self.removableRun(in: state) { usage, next in
                    guard excess > 0, next.baseSequence <= floor else { return false }
                    excess -= Int64(SegmentHeader.size) + usage.totalBytes
                    return true
                }
            }
        }
    }

    /// Retention by position: the oldest segments whose every record has a
    /// sequence number below `sequence` (the next segment starts at or
    /// before it), whatever their expiry — what a queue drops once every
    /// consumer has read past it. The newest segment always stays.
    func removeSegments(before sequence: UInt64) async throws(OutboxLogError) -> RetentionReport {
        if configuration.readOnly { throw OutboxLogError(.invalidArgument, "the log was opened read-only") }
        try await waitForIndex()
        try await claimCompactionSlot()
        return try await runOnOwnThread { () throws(OutboxLogError) -> RetentionReport in
            try self.removeRunClaimed { state in Self.removableRun(in: state) { _, next in next.baseSequence <= sequence } }
        }
    }

    /// Removes the run `choose` picks, with the compaction slot claimed (no
    /// compaction moves segments meanwhile); releases it when done.
    private func removeRunClaimed(_ choose: (LogState) -> [(file: SegmentFile, size: Int64)]) throws(OutboxLogError) -> RetentionReport {
        defer { releaseCompaction() }
        let (run, keptFrom) = state.withLock { state in
            let run = choose(state)
            // The run is a prefix of the order, followed by a segment (the
            // run never takes the newest).
            return (run, run.isEmpty ? nil : state.slots[state.order[run.count]]?.header.baseSequence)
        }
        guard !run.isEmpty else { return RetentionReport() }
        // The keys the run holds, read from its files (off the lock): the
        // index drops them without a walk of every live key.
        let keys = keys(in: run)

        // No wait for later records to be durable, unlike compaction: what
        // goes was given up (expired, or below the caller's position), so
        // a power loss that also takes a newer, unsynced record of the same
        // key leaves it absent rather than back at a value given up anyway.
        let intent = CompactionIntent(
            inputs: run.map { .init(base: $0.file.header.baseSequence, salt: $0.file.header.salt) }, outputs: [],
            setAsideInputs: false)
        let swap = SegmentSwap(layout: layout, fileSystem: fileSystem)
        var committed = false
        do {
            try swap.commit(intent, committed: &committed)
        } catch {
            // Committed but not synced: the next open removes the segments
            // or keeps them, and this log cannot know which.
            if committed { failAfterCommit(error) }
            throw error
        }

        let removed = Set(run.map(\.file.id))
        var report = RetentionReport()
        report.segmentsRemoved = run.count
        report.bytesRemoved = run.reduce(0) { $0 + $1.size }
        report.removedBelow = keptFrom
        report.keysRemoved = state.withLock { state in
            let keys = keys.map { state.index.removeEntries(in: removed, among: $0) } ?? state.index.removeEntries(in: removed)
            for id in removed {
                state.slots[id] = nil
                state.index.usage[id] = nil
            }
            state.order.removeAll { removed.contains($0) }
            return keys
        }

        var salts: [UInt64: UInt64?] = [:]
        for item in run { salts[item.file.header.baseSequence] = item.file.header.salt }
        do { try swap.finish(intent, segmentSalts: salts) } catch {
            failAfterCommit(error)
            throw error
        }
        compactionObserver.withLock { $0 }?()
        if configuration.indexCheckpoints, !state.withLock({ $0.compactionCancelled }) {
            do { try writeIndexCheckpoint() } catch {
                logger.warning("index checkpoint after retention not written", metadata: ["error": "\(error)"])
            }
        }
        return report
    }

    /// The keys of every value and annotation in `run`'s files, or `nil` if
    /// one cannot be read (the caller then walks the whole index instead).
    private func keys(in run: [(file: SegmentFile, size: Int64)]) -> Set<LogKey>? {
        var keys: Set<LogKey> = []
        for (file, size) in run {
            let reader = ChunkedFileReader(fileSystem: fileSystem, descriptor: file.descriptor, path: file.path, fileSize: size)
            let scanner = SegmentScanner(reader: reader, header: file.header)
            do throws(OutboxLogError) {
                let scanned = try scanner.scanRun(
                    from: Int64(SegmentHeader.size), previous: nil, resumingAfterDamage: false,
                    visit: { record in if record.kind == .value || record.kind == .annotation { keys.insert(record.key) } })
                if scanned.stop != nil { return nil }
            } catch {
                return nil
            }
        }
        return keys
    }

    /// When retention can next remove the oldest segment (see
    /// ``LogStatistics/nextRemovalAt``).
    static func nextRemoval(in state: LogState) -> Date? {
        guard let oldest = state.order.first else { return nil }
        let usage = state.index.usage[oldest] ?? SegmentUsage()
        guard usage.unexpiring == 0 else { return nil }
        if usage.latestExpiry == .min {
            // Nothing but tombstones and markers: a sealed one can go now,
            // the active one never needs to.
            return oldest == state.activeID ? nil : .distantPast
        }
        return RecordExpiry.date(usage.latestExpiry)
    }

    /// The oldest sealed segments, in order, that have expired at `now`
    /// and hold no record at or past `floor`.
    private static func removableRun(in state: LogState, expiredAt now: Int64, below floor: UInt64) -> [(file: SegmentFile, size: Int64)] {
        removableRun(in: state) { usage, next in usage.hasExpired(at: now) && next.baseSequence <= floor }
    }

    /// The oldest sealed segments, in order, that `removable` allows (given
    /// the segment's usage and the next segment's header) and that are
    /// fully written, each followed by a segment that exists on disk: the
    /// newest segment always stays, since it carries the sequence floor
    /// (Docs/FORMAT.md, "The sequence floor").
    private static func removableRun(
        in state: LogState, _ removable: (SegmentUsage, SegmentHeader) -> Bool
    ) -> [(file: SegmentFile, size: Int64)] {
        var run: [(file: SegmentFile, size: Int64)] = []
        for (position, id) in state.order.enumerated() {
            guard id != state.activeID, position + 1 < state.order.count,
                let next = state.slots[state.order[position + 1]], next.file != nil,
                let slot = state.slots[id], let file = slot.file
            else { break }
            let usage = state.index.usage[id] ?? SegmentUsage()
            let size = Int64(SegmentHeader.size) + usage.totalBytes
            // A segment sealed by a roll may still have bytes waiting for
            // the writer: it goes once they are written.
            guard slot.writtenSize >= size, removable(usage, next.header) else { break }
            run.append((file, size))
        }
        return run
    }
}
