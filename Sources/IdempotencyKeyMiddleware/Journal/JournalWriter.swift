import Dispatch
import Foundation
import OutboxLocking
import OutboxLog
import SystemPackage

/// Appends the key journal's frames on a thread of its own, and lets
/// concurrent appends share one `fdatasync` (group commit): while one sync
/// runs, every record submitted meanwhile waits for the next, which covers
/// them all. File operations (roll, seal, segment removal) run here too, in
/// submission order. Never runs blocking I/O on Swift's cooperative pool.
///
/// After any write or sync fails the writer is *poisoned*: that batch and
/// every later one fail (a failed sync is never retried: what reached the
/// disk is unknown), until the store is reopened.
final class JournalWriter: Sendable {
    /// Where a submitted record lives.
    struct Location: Sendable, Hashable {
        var segment: UInt32
        var offset: UInt32
        var length: UInt32
    }

    private enum Job {
        case write(segment: UInt32, offset: Int64, bytes: [UInt8], entry: JournalEntry)
        /// Seal the active segment (sync, write its index file) and start `next`.
        case roll(next: UInt32)
        case remove([UInt32])
    }

    private struct State {
        var jobs: [Job] = []
        var waiters: [(sequence: UInt64, durable: Bool, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextSequence: UInt64 = 1
        /// Every job up to this sequence is done (written; durable if asked).
        var doneSequence: UInt64 = 0
        var activeSegment: UInt32
        var activeSize: Int64
        var failure: IdempotencyKeyStoreError?
        var stopping = false
        /// The thread is waiting for work: the next submitter wakes it. While
        /// it works, submitters only queue (no wake-up per record: the
        /// thread takes everything queued when it comes back).
        var idle = false
        /// The thread has finished (after a close).
        var finished = false
        var stopped: [CheckedContinuation<Void, Never>] = []
    }

    let directory: FilePath
    let fileSystem: any FileSystem
    let segmentSize: Int64
    private let state: Locked<State>
    private let wake = DispatchSemaphore(value: 0)
    /// Owned by the writer thread only.
    private let active: Locked<(descriptor: FileDescriptor, entries: [JournalEntry])>

    /// Starts a writer appending to segment `segment`, open as `descriptor`
    /// with `size` bytes, whose records so far are `entries`.
    init(
        directory: FilePath, fileSystem: any FileSystem, segmentSize: Int, segment: UInt32, descriptor: FileDescriptor, size: Int64,
        entries: [JournalEntry]
    ) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.segmentSize = Int64(segmentSize)
        state = Locked(State(activeSegment: segment, activeSize: size))
        active = Locked((descriptor, entries))
        let thread = Thread { [self] in self.work() }
        thread.name = "idempotency-journal-writer"
        thread.start()
    }

    /// The segment appends go to now.
    var activeSegment: UInt32 { state.withLock { $0.activeSegment } }

    /// Queues `frame` (the record of `digest`, kind and expiry in `entry`)
    /// and returns where it will be and the sequence to wait for. Call in
    /// the order the records must have in the journal.
    func submit(_ frame: [UInt8], entry: JournalEntry) throws(IdempotencyKeyStoreError) -> (Location, sequence: UInt64) {
        let result = state.withLock { state -> Result<(Location, UInt64), IdempotencyKeyStoreError> in
            if let failure = state.failure { return .failure(failure) }
            if state.stopping { return .failure(IdempotencyKeyStoreError(.closed, "the key store is closed")) }
            if state.activeSize + Int64(frame.count) > segmentSize, state.activeSize > Int64(JournalFormat.segmentHeaderSize) {
                guard state.activeSegment < JournalFormat.maximumSegmentID else { return .failure(Self.exhausted) }
                state.activeSegment += 1
                state.activeSize = Int64(JournalFormat.segmentHeaderSize)
                state.jobs.append(.roll(next: state.activeSegment))
            }
            var entry = entry
            entry.offset = UInt32(state.activeSize)
            entry.length = UInt32(frame.count)
            let location = Location(segment: state.activeSegment, offset: entry.offset, length: entry.length)
            state.jobs.append(.write(segment: state.activeSegment, offset: state.activeSize, bytes: frame, entry: entry))
            state.activeSize += Int64(frame.count)
            defer { state.nextSequence += 1 }
            return .success((location, state.nextSequence))
        }
        let (location, sequence) = try result.get()
        wakeIfIdle()
        return (location, sequence)
    }

    private static let exhausted = IdempotencyKeyStoreError(
        .io, "the key journal has no segment id left to roll to (\(JournalFormat.maximumSegmentID)); move the key directory aside")

    /// Seals the active segment now (if it holds any record) and starts the
    /// next, so that it can be removed once its records expire.
    func roll() throws(IdempotencyKeyStoreError) {
        let result = state.withLock { state -> Result<Void, IdempotencyKeyStoreError> in
            if let failure = state.failure { return .failure(failure) }
            guard state.activeSize > Int64(JournalFormat.segmentHeaderSize) else { return .success(()) }
            guard state.activeSegment < JournalFormat.maximumSegmentID else { return .failure(Self.exhausted) }
            state.activeSegment += 1
            state.activeSize = Int64(JournalFormat.segmentHeaderSize)
            state.jobs.append(.roll(next: state.activeSegment))
            state.nextSequence += 1
            return .success(())
        }
        wakeIfIdle()
        try result.get()
    }

    /// Queues the removal of whole segments (their journal and index files).
    func remove(segments: [UInt32]) throws(IdempotencyKeyStoreError) -> UInt64 {
        let result = state.withLock { state -> Result<UInt64, IdempotencyKeyStoreError> in
            if let failure = state.failure { return .failure(failure) }
            state.jobs.append(.remove(segments))
            defer { state.nextSequence += 1 }
            return .success(state.nextSequence)
        }
        wakeIfIdle()
        return try result.get()
    }

    /// Waits until every job up to `sequence` is written, and synced if `durable`.
    func wait(for sequence: UInt64, durable: Bool) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let outcome = state.withLock { state -> Result<Void, any Error>? in
                if let failure = state.failure { return .failure(failure) }
                if sequence <= state.doneSequence, !durable { return .success(()) }
                state.waiters.append((sequence, durable, continuation))
                return nil
            }
            if let outcome { continuation.resume(with: outcome) } else { wakeIfIdle() }
        }
    }

    /// Wakes the thread if it is waiting for work.
    private func wakeIfIdle() {
        let idle = state.withLock { state in
            defer { state.idle = false }
            return state.idle
        }
        if idle { wake.signal() }
    }

    /// Finishes every queued job, syncs, and stops the thread. Idempotent.
    func close() async {
        await withCheckedContinuation { continuation in
            let finished = state.withLock { state -> Bool in
                if state.finished { return true }
                state.stopping = true
                state.stopped.append(continuation)
                return false
            }
            if finished { continuation.resume() } else { wakeIfIdle() }
        }
    }

    /// The sequence of the last job queued: wait for it to see every job so
    /// far done (a barrier).
    var lastSequence: UInt64 { state.withLock { $0.nextSequence - 1 } }

    /// Starts stopping without waiting (a store released without `close`).
    func closeInBackground() {
        state.withLock { $0.stopping = true }
        wakeIfIdle()
    }

    // MARK: The writer thread

    private func work() {
        while true {
            // Take everything queued, or go idle until a submitter wakes us.
            let taken = state.withLock { state -> (jobs: [Job], waiters: [Waiter], last: UInt64, stopping: Bool)? in
                guard !state.jobs.isEmpty || !state.waiters.isEmpty || state.stopping else {
                    state.idle = true
                    return nil
                }
                defer {
                    state.jobs = []
                    state.waiters = []
                }
                return (state.jobs, state.waiters, state.nextSequence - 1, state.stopping)
            }
            guard let (jobs, waiters, last, stopping) = taken else {
                wake.wait()
                continue
            }
            let outcome = run(jobs, sync: stopping || waiters.contains { $0.durable })
            finish(waiters, upTo: last, outcome: outcome)
            if stopping, state.withLock({ $0.jobs.isEmpty }) {
                stop()
                return
            }
        }
    }

    private typealias Waiter = (sequence: UInt64, durable: Bool, continuation: CheckedContinuation<Void, any Error>)

    /// Resumes the waiters whose jobs are done (or all of them with the
    /// failure); the rest wait for the next round.
    private func finish(_ waiters: [Waiter], upTo last: UInt64, outcome: Result<Void, IdempotencyKeyStoreError>) {
        let ready = state.withLock { state -> [(CheckedContinuation<Void, any Error>, Result<Void, any Error>)] in
            if case .failure(let error) = outcome, state.failure == nil { state.failure = error }
            if state.failure == nil { state.doneSequence = last }
            var ready: [(CheckedContinuation<Void, any Error>, Result<Void, any Error>)] = []
            for waiter in waiters {
                if let failure = state.failure {
                    ready.append((waiter.continuation, .failure(failure)))
                } else if waiter.sequence <= last {
                    ready.append((waiter.continuation, .success(())))
                } else {
                    state.waiters.append(waiter)
                }
            }
            return ready
        }
        for (continuation, result) in ready { continuation.resume(with: result) }
    }

    /// Closes the active segment and fails whoever still waits.
    private func stop() {
        // Best effort: the descriptor is gone either way.
        active.withLock { try? fileSystem.close($0.descriptor) }
        let (stopped, late) = state.withLock { state in
            state.finished = true
            state.failure = state.failure ?? IdempotencyKeyStoreError(.closed, "the key store is closed")
            defer {
                state.stopped = []
                state.waiters = []
            }
            return (state.stopped, state.waiters)
        }
        for waiter in late { waiter.continuation.resume(throwing: IdempotencyKeyStoreError(.closed, "the key store is closed")) }
        for continuation in stopped { continuation.resume() }
    }

    /// Runs `jobs` in order; syncs the active segment at the end if `sync`.
    private func run(_ jobs: [Job], sync: Bool) -> Result<Void, IdempotencyKeyStoreError> {
        if state.withLock({ $0.failure != nil }) { return .success(()) }
        do throws(IdempotencyKeyStoreError) {
            var buffer: [UInt8] = []
            var bufferOffset: Int64 = 0
            for job in jobs {
                switch job {
                case .write(_, let offset, let bytes, let entry):
                    if buffer.isEmpty { bufferOffset = offset }
                    buffer.append(contentsOf: bytes)
                    active.withLock { $0.entries.append(entry) }
                case .roll(let next):
                    try flush(&buffer, at: bufferOffset)
                    try seal(startingNext: next)
                case .remove(let segments):
                    try flush(&buffer, at: bufferOffset)
                    try removeFiles(of: segments)
                }
            }
            try flush(&buffer, at: bufferOffset)
            if sync { try io("sync the active segment") { try fileSystem.synchronize(active.withLock { $0.descriptor }) } }
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    private func flush(_ buffer: inout [UInt8], at offset: Int64) throws(IdempotencyKeyStoreError) {
        guard !buffer.isEmpty else { return }
        let descriptor = active.withLock { $0.descriptor }
        try io("append to the active segment") { try JournalFiles.writeAll(buffer, to: descriptor, at: offset, fileSystem: fileSystem) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Syncs the active segment, writes its index file, and starts segment `next`.
    private func seal(startingNext next: UInt32) throws(IdempotencyKeyStoreError) {
        let (descriptor, entries) = active.withLock { ($0.descriptor, $0.entries) }
        try io("seal a segment") {
            try fileSystem.synchronize(descriptor)
            try JournalFiles.writeIndex(segment: next - 1, entries: Self.withoutSettledClaims(entries), in: directory, fileSystem: fileSystem)
            let created = try JournalFiles.createSegment(next, in: directory, fileSystem: fileSystem)
            try fileSystem.close(descriptor)
            active.withLock { $0 = (created, []) }
        }
    }

    /// A segment's entries less the claims settled later in the same segment
    /// (by a completion, an unknown outcome or a release): an open needs only
    /// the records that still decide a key, so most segments' index files
    /// hold one entry per key, not two.
    static func withoutSettledClaims(_ entries: [JournalEntry]) -> [JournalEntry] {
        var settled: Set<KeyDigest> = []
        var kept: [JournalEntry] = []
        kept.reserveCapacity(entries.count / 2 + 1)
        for entry in entries.reversed() {
            if entry.kind == .claim {
                if settled.contains(entry.digest) { continue }
            } else {
                settled.insert(entry.digest)
            }
            kept.append(entry)
        }
        return kept.reversed()
    }

    private func removeFiles(of segments: [UInt32]) throws(IdempotencyKeyStoreError) {
        try io("remove expired segments") {
            for segment in segments {
                for name in [JournalFormat.segmentName(segment), JournalFormat.indexName(segment)] {
                    do { try fileSystem.removeFile(directory.appending(name)) } catch let error as Errno where error == .noSuchFileOrDirectory {}
                }
            }
            try fileSystem.synchronizeDirectory(directory)
        }
    }

    private func io(_ what: String, _ body: () throws -> Void) throws(IdempotencyKeyStoreError) {
        do { try body() } catch {
            throw IdempotencyKeyStoreError(.poisoned, "cannot \(what) in \(directory): \(error); the key store accepts no writes until reopened")
        }
    }
}
