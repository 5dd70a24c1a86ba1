import Logging

extension OutboxLog {
    /// How a log is opened and how it behaves.
    ///
    /// The defaults suit an app's outbox: small segments (so a mostly-drained
    /// queue stays small on disk), strict recovery, automatic compaction.
    public struct Configuration: Sendable {
        /// What an open does when it finds damage other than a torn tail.
        public enum RecoveryMode: String, Sendable, Hashable {
            /// Fail the open with a ``OutboxLogError/Code/corruption`` error
            /// naming the file, offset and reason; modify nothing.
            case strict
            /// Keep every intact record, move each damaged file into the
            /// `damaged/` subdirectory, and list what was skipped in the
            /// ``RecoveryReport``.
            case salvage
        }

        /// When a segment reaches this size, the next append starts a new one.
        /// Default 8 MiB.
        public var segmentSize: Int = 8 << 20

        /// The largest record (frame header + key + payload) an append
        /// accepts; larger ones fail with ``OutboxLogError/Code/recordTooLarge``
        /// and write nothing. Default 16 MiB, at most ``absoluteMaximumRecordSize``.
        public var maximumRecordSize: Int = 16 << 20

        /// The format's upper bound on a record: 1 GiB.
        public static let absoluteMaximumRecordSize = 1 << 30

        /// The most bytes (frames included) one atomic batch may hold: 2 GiB.
        /// A batch is written into a single segment, whose records are
        /// addressed by 32-bit offsets.
        public static let absoluteMaximumBatchSize = 1 << 31

        /// Strict (the default) or salvage; see ``RecoveryMode``.
        public var recoveryMode: RecoveryMode = .strict

        /// Create the directory if it does not exist, with any missing
        /// parents (mode 0700 for each directory created). Default `true`.
        public var createIfMissing: Bool = true

        /// Open for reading only: recovery reports what it *would* repair but
        /// changes nothing on disk, and every write fails. Used by
        /// `outbox log verify` and `outbox log dump`.
        public var readOnly: Bool = false

        /// Compact automatically when dead bytes make up at least this share
        /// of the sealed segments. `nil` disables automatic compaction.
        /// Default 0.5.
        public var automaticCompactionRatio: Double? = 0.5

        /// Automatic compaction waits until the sealed segments hold at least
        /// this many bytes. Default: one segment.
        public var automaticCompactionMinimumBytes: Int? = nil

        /// The most bytes one group commit writes and syncs together; the
        /// rest waits for the next group. Records are never split, and an
        /// atomic batch larger than this is written as one group of its own.
        /// Default 1 MiB.
        public var groupCommitLimit: Int = 1 << 20

        /// Buffered appends are handed to the writer thread once this many
        /// bytes are waiting. Default 256 KiB.
        public var bufferedFlushThreshold: Int = 256 << 10

        /// The most bytes of appended records that wait in memory for the
        /// writer (back-pressure): an append that would exceed it waits for
        /// room first, and ``OutboxLog/submit(_:)`` is refused with
        /// ``OutboxLogError/Code/backPressure``. A single batch larger than
        /// this is admitted once nothing else waits. Default 32 MiB.
        public var maximumPendingBytes: Int = 32 << 20

        /// How far ahead of its last record the writer zero-fills the active
        /// segment (at most up to ``segmentSize``), so that a `durable`
        /// append overwrites allocated bytes and its sync has no file size to
        /// commit. The zeros never reach a sealed segment (they are cut off
        /// first), recovery reads them as space allocated ahead and never
        /// written (Docs/FORMAT.md, "Space allocated ahead"), and a zero-fill
        /// that fails (a full disk) only stops allocating ahead in that
        /// segment. `0` (the default) disables it; Docs/BENCHMARKS.md has
        /// what it measured.
        ///
        /// - Note: Off by default until a quiet side-by-side run shows that
        ///   it pays (Docs/BENCHMARKS.md). The torture suite runs every other
        ///   cycle of every mode with it on.
        public var preallocation: Int = 0

        /// Whether a caller waiting for `written` may write in place: when no
        /// write is in progress and nothing is queued for the writer thread,
        /// the caller hands its already-encoded bytes (at most
        /// ``groupCommitLimit``) to the OS with one `pwrite` itself instead
        /// of waking the writer thread and sleeping until it reports. Syncs
        /// and file creation always run on the writer thread. `false` keeps
        /// every system call off the caller's thread. Default `true`.
        public var writesInPlace: Bool = true

        /// A read of at most this many bytes (``OutboxLog/get(_:)-(LogKey)``
        /// and ``OutboxLog/get(_:)-([LogKey])``: the records' sizes are known
        /// from the index before reading) runs on the caller's thread
        /// instead of a reader thread: a few `pread`s of records usually in
        /// the page cache cost less than waking a thread and waiting for it.
        /// So does a page of ``OutboxLog/entries(after:limit:)`` that
        /// continues the previous one at the end of the log, when no more
        /// than this many bytes were appended since (a queue's consumer
        /// keeping up). Larger reads, and every other scan, run on the
        /// reader threads. `0` sends every read to them. Default 64 KiB.
        public var readsInPlaceUpTo: Int = 64 << 10

        /// Threads that serve reads; blocking reads never run on Swift's
        /// cooperative pool. Default 2.
        public var readerThreads: Int = 2

        /// Keep an index checkpoint (`INDEX`, Docs/FORMAT.md): written at
        /// close, after each compaction, and once
        /// ``indexCheckpointInterval`` bytes have been appended since the
        /// last one; read by the next open, which then scans only the newest
        /// segment and the records written after the checkpoint instead of
        /// every record. Default `false` (the outbox store turns it on).
        public var indexCheckpoints = false

        /// Bytes appended between two index checkpoints (or the size of the
        /// last checkpoint, if that is larger: writing one never costs more
        /// than the log it saves reading). Default 32 MiB.
        public var indexCheckpointInterval = 32 << 20

        /// With a checkpoint the open can use, return as soon as the newest
        /// segment is recovered, and load the rest of the index on the log's
        /// own thread: appends (values and tombstones) go on at once; reads,
        /// annotations, `contains`, `keys` and compaction wait until the
        /// index is complete. Damage the load finds in a segment written
        /// before the open is then reported by the calls after it (the log
        /// is poisoned with the `.corruption` error), not by the open.
        /// Default `false`.
        public var opensBeforeIndexIsLoaded = false

        /// The file system under the log; replace it to inject faults.
        public var fileSystem: any FileSystem = PosixFileSystem()

        /// Where the log reports recovery, compaction and failures.
        public var logger: Logger = Logger(label: "outbox.log")

        public init() {}

        /// Checks every value; throws ``OutboxLogError/Code/invalidArgument``
        /// naming the first bad one.
        func validate() throws(OutboxLogError) {
            func require(_ condition: Bool, _ message: String) throws(OutboxLogError) {
                if !condition { throw OutboxLogError(.invalidArgument, message) }
            }
            try require(segmentSize >= 4096 && segmentSize <= 2 << 30, "segmentSize must be in 4 KiB...2 GiB")
            try require(
                maximumRecordSize >= RecordFrame.headerSize + 1 && maximumRecordSize <= Self.absoluteMaximumRecordSize,
                "maximumRecordSize must be in \(RecordFrame.headerSize + 1)...\(Self.absoluteMaximumRecordSize)")
            if let ratio = automaticCompactionRatio {
                try require(ratio > 0 && ratio <= 1, "automaticCompactionRatio must be in (0, 1]")
            }
            if let minimum = automaticCompactionMinimumBytes {
                try require(minimum >= 0, "automaticCompactionMinimumBytes must not be negative")
            }
            try require(groupCommitLimit >= 4096, "groupCommitLimit must be at least 4 KiB")
            try require(bufferedFlushThreshold >= 1, "bufferedFlushThreshold must be positive")
            try require(maximumPendingBytes >= groupCommitLimit, "maximumPendingBytes must be at least groupCommitLimit")
            try require(readerThreads >= 1 && readerThreads <= 64, "readerThreads must be in 1...64")
            try require(indexCheckpointInterval >= 4096, "indexCheckpointInterval must be at least 4 KiB")
            try require(readsInPlaceUpTo >= 0, "readsInPlaceUpTo must not be negative")
            try require(preallocation >= 0, "preallocation must not be negative")
        }
    }
}
