/// What an open found on disk and what it did about it.
///
/// Every open produces one, clean or not: ``OutboxLog/recoveryReport``.
/// Nothing is ever dropped without appearing here.
public struct RecoveryReport: Sendable, Hashable, CustomStringConvertible {
    /// Bytes cut from the end of the newest segment: the records a crash
    /// interrupted (never acknowledged as `durable`).
    public struct TruncatedTail: Sendable, Hashable {
        /// The segment's file name.
        public var file: String
        /// Where the valid data ends and the file was cut.
        public var offset: Int64
        /// How many bytes were cut.
        public var bytes: Int64
        /// Why the bytes were not records.
        public var damage: LogDamage
        /// ``damage`` for people: `CRC mismatch`, `incomplete frame header`.
        public var reason: String { damage.description }
        /// Complete, verified records found *after* the damage and dropped
        /// with it, because a crash lost unsynced bytes before them and
        /// keeping them would leave a hole in the history.
        public var unreachableRecords: Int
    }

    /// A damaged range skipped by salvage (or, read-only, stepped over):
    /// `offset` is the damaged frame's (0 for a damaged header, a gap, or a
    /// damaged `COMPACTION` file). See Docs/FORMAT.md, "What a reader reports".
    public struct SkippedRange: Sendable, Hashable {
        public var file: String
        public var offset: Int64
        public var bytes: Int64
        /// Why the bytes were skipped.
        public var damage: LogDamage
        /// ``damage`` for people.
        public var reason: String { damage.description }

        public init(file: String, offset: Int64, bytes: Int64, damage: LogDamage) {
            self.file = file
            self.offset = offset
            self.bytes = bytes
            self.damage = damage
        }
    }

    /// What happened to a compaction a crash interrupted.
    public enum InterruptedCompaction: String, Sendable, Hashable {
        /// Its outputs were committed: recovery finished the swap.
        case completed
        /// It had not committed: recovery deleted its partial outputs.
        case rolledBack
    }

    /// The log's directory.
    public var directory: String
    /// Segment files in the log after recovery.
    public var segments = 0
    /// Records that verified and were committed (markers are not counted):
    /// past damage too in a read-only salvage open, never those a torn tail
    /// made unreachable. Superseded and deleted records count too.
    public var records = 0
    /// Keys with a live value after recovery: exactly the entries
    /// ``OutboxLog/allEntries(pageSize:)`` serves.
    public var liveKeys = 0
    /// Bytes scanned.
    public var bytes: Int64 = 0
    /// The sequence number the next append receives.
    public var nextSequence: UInt64 = 1
    /// The torn tail that was cut, if any.
    public var truncatedTail: TruncatedTail?
    /// Damaged ranges skipped by salvage, or stepped over by a read-only
    /// salvage open (`outbox log verify`).
    public var skipped: [SkippedRange] = []
    /// Files moved into `damaged/` by salvage.
    public var setAsideFiles: [String] = []
    /// A compaction interrupted by a crash, and what recovery did with it.
    public var interruptedCompaction: InterruptedCompaction?
    /// Leftover temporary files that were deleted.
    public var removedTemporaryFiles: [String] = []
    /// `true` if the log was opened read-only: the repairs above were *not*
    /// applied on disk.
    public var readOnly = false
    /// The last sequence number the index checkpoint (`INDEX`) covered, if
    /// the open used one: it then read only the newest segment and the
    /// records after the checkpoint, and ``records`` and ``bytes`` count
    /// what it read (Docs/FORMAT.md, "Index checkpoint").
    public var indexCheckpoint: UInt64?
    /// Why an index checkpoint that was there was not used, if it was not:
    /// the open then read the whole log.
    public var checkpointRejected: IndexCheckpointRejection?
    /// How long the open took.
    public var duration: Duration = .zero

    /// `true` if nothing was damaged: no torn tail, nothing skipped.
    public var isClean: Bool { truncatedTail == nil && skipped.isEmpty && setAsideFiles.isEmpty }

    public init(directory: String) { self.directory = directory }

    /// Zeroes the per-scan counts before the scan salvage runs again after
    /// its repairs (what was found and repaired is kept).
    mutating func restartCounts() {
        records = 0
        bytes = 0
    }

    public var description: String {
        var lines = [
            "\(directory): \(segments) segment(s), \(records) record(s), \(liveKeys) live key(s), \(bytes) bytes"
                + ", next sequence \(nextSequence)"
        ]
        if let tail = truncatedTail {
            lines.append(
                "torn tail: \(tail.file) cut at offset \(tail.offset), \(tail.bytes) bytes (\(tail.reason))"
                    + (tail.unreachableRecords > 0 ? ", \(tail.unreachableRecords) unreachable record(s)" : ""))
        }
        for range in skipped {
            lines.append("skipped: \(range.file) offset \(range.offset), \(range.bytes) bytes (\(range.reason))")
        }
        for file in setAsideFiles { lines.append("moved aside: damaged/\(file)") }
        if let interruptedCompaction { lines.append("interrupted compaction: \(interruptedCompaction.rawValue)") }
        for file in removedTemporaryFiles { lines.append("removed temporary file: \(file)") }
        if readOnly && !isClean { lines.append("(read-only: nothing was changed on disk)") }
        lines.append(isClean ? "clean" : "damage found")
        return lines.joined(separator: "\n")
    }
}
