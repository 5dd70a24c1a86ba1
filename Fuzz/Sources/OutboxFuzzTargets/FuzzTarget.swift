import IdempotencyKeyMiddleware
import Outbox
import OutboxLog

/// One fuzz target: what it reads, its body, and the seeds its corpus
/// starts from. The bodies live next to the code they test, with `package`
/// access to its internals (`LogFormatFuzzing`, `LogSegmentFuzzing`,
/// `EntryCodecFuzzing`, `StoreCheckpointFuzzing`, `SpoolFuzzing`,
/// `JournalFuzzing`) or, for the middleware's requests, in this module
/// through its public API. Fuzz/README.md says how they are built and run.
package struct FuzzTarget: Sendable {
    /// The target's name: the driver's first argument and its corpus folder
    /// under Fuzz/corpus.
    package let name: String
    /// What the target reads, for `OutboxFuzz --list` and the README.
    package let summary: String
    /// libFuzzer's `-max_len` for it.
    package let maximumLength: Int
    /// Runs one input: throws what it found; crashes are found by the
    /// sanitizers. Blocks the calling thread, so never call it from Swift's
    /// cooperative pool (the middleware target waits for async work): the
    /// libFuzzer driver calls it, tests call ``check(_:)``.
    package let run: @Sendable (UnsafeRawBufferPointer) throws(FuzzViolation) -> Void
    /// The same, for async callers; `nil` for a target that never waits.
    let asyncRun: (@Sendable ([UInt8]) async throws(FuzzViolation) -> Void)?
    /// The inputs the checked-in corpus is generated from.
    package let seeds: @Sendable () async throws -> [[UInt8]]

    package static let all: [FuzzTarget] = [
        FuzzTarget(
            name: "frame", summary: "a record frame (RecordFrame.decode) at any offset", maximumLength: 4096,
            run: { input throws(FuzzViolation) in try LogFormatFuzzing.frame(input) },
            seeds: { LogFormatFuzzing.frameSeeds() + (try VectorSeeds.frames()) }),
        FuzzTarget(
            name: "segment", summary: "a whole segment file, through the scanner recovery uses", maximumLength: 16384,
            run: { input throws(FuzzViolation) in try SegmentTarget.run(input) },
            seeds: { try await SegmentTarget.seeds() }),
        FuzzTarget(
            name: "segment-header", summary: "the header at the start of a segment file", maximumLength: 128,
            run: { input throws(FuzzViolation) in try LogFormatFuzzing.segmentHeader(input) },
            seeds: { LogFormatFuzzing.headerSeeds() }),
        FuzzTarget(
            name: "compaction-intent", summary: "a COMPACTION file", maximumLength: 512,
            run: { input throws(FuzzViolation) in try LogFormatFuzzing.compactionIntent(input) },
            seeds: { LogFormatFuzzing.intentSeeds() }),
        FuzzTarget(
            name: "entry", summary: "an outbox entry's body, state or completion as the store reads it", maximumLength: 4096,
            run: { input throws(FuzzViolation) in try EntryCodecFuzzing.entry(input) },
            seeds: { try EntryCodecFuzzing.seeds() }),
        FuzzTarget(
            name: "store-checkpoint", summary: "a store checkpoint (SCHEDULE): header, key check and body, plain or sealed",
            maximumLength: 8192,
            run: { input throws(FuzzViolation) in try CheckpointTarget.run(input) },
            seeds: { try await CheckpointTarget.seeds() }),
        FuzzTarget(
            name: "spool", summary: "spool and guard names, spool marks, spooled entry records, set-aside record files",
            maximumLength: 4096,
            run: { input throws(FuzzViolation) in try SpoolFuzzing.spool(input) },
            seeds: { try await SpoolTarget.seeds() }),
        FuzzTarget(
            name: "key-record", summary: "the durable key store's records: completed, claimed and outcome-unknown keys",
            maximumLength: 8192,
            run: { input throws(FuzzViolation) in try KeyRecordFuzzing.record(input) },
            seeds: { KeyRecordFuzzing.seeds() }),
        FuzzTarget(
            name: "queue-record", summary: "a durable queue's records: an element's payload, a consumer's commit",
            maximumLength: 1024,
            run: { input throws(FuzzViolation) in try QueueRecordFuzzing.record(input) },
            seeds: { QueueRecordFuzzing.seeds() }),
        FuzzTarget(
            name: "queue-snapshot", summary: "a queue's snapshot (SNAPSHOT's JSON) as outbox top reads it", maximumLength: 8192,
            run: { input throws(FuzzViolation) in try SnapshotTarget.run(input) },
            seeds: { SnapshotTarget.seeds() }),
        FuzzTarget(
            name: "idempotency-request", summary: "a request's Idempotency-Key and body, through IdempotencyMiddleware",
            maximumLength: 1024,
            run: { input throws(FuzzViolation) in try IdempotencyTarget.run(input) },
            asyncRun: { input throws(FuzzViolation) in try await IdempotencyTarget.run(input) },
            seeds: { IdempotencyTarget.seeds() }),
    ]

    init(
        name: String, summary: String, maximumLength: Int,
        run: @escaping @Sendable (UnsafeRawBufferPointer) throws(FuzzViolation) -> Void,
        asyncRun: (@Sendable ([UInt8]) async throws(FuzzViolation) -> Void)? = nil,
        seeds: @escaping @Sendable () async throws -> [[UInt8]]
    ) {
        self.name = name
        self.summary = summary
        self.maximumLength = maximumLength
        self.run = run
        self.asyncRun = asyncRun
        self.seeds = seeds
    }

    package static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }

    /// Runs one input from async code (the corpus replay test).
    package func check(_ input: [UInt8]) async throws(FuzzViolation) {
        if let asyncRun { return try await asyncRun(input) }
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: input.count, alignment: 8)
        defer { copy.deallocate() }
        copy.copyBytes(from: input)
        try run(UnsafeRawBufferPointer(copy))
    }
}
