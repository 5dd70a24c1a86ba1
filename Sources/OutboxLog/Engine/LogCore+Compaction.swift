import Foundation
import OutboxLocking
import SystemPackage

/// What a compaction did.
public struct CompactionReport: Sendable, Hashable, CustomStringConvertible {
    /// Segments rewritten or deleted.
    public var inputSegments = 0
    /// Segments written in their place.
    public var outputSegments = 0
    /// Bytes of the inputs.
    public var bytesBefore: Int64 = 0
    /// Bytes of the outputs.
    public var bytesAfter: Int64 = 0
    /// Live records copied forward.
    public var recordsCopied = 0
    /// How long it took.
    public var duration: Duration = .zero

    public var description: String {
        inputSegments == 0
            ? "nothing to compact"
            : "compacted \(inputSegments) segment(s) of \(bytesBefore) bytes into \(outputSegments) of \(bytesAfter) bytes, "
                + "\(recordsCopied) live record(s) copied"
    }
}

/// Compaction rewrites sealed segments without their dead records.
///
/// Which segments: every sealed segment from the first one that holds dead
/// bytes to the newest sealed one (the active segment is never compacted).
/// The segments before that run are *clean* — no superseded record, no
/// tombstone — so no record older than the run can be shadowed by a
/// tombstone in it, and every tombstone in the run can be dropped.
///
/// It runs on its own thread; appends continue meanwhile. Live records are
/// checked against the index in batches under the lock, copied with a new
/// salt into `.compacting` files, and swapped in through ``SegmentSwap``.
/// At the swap, an index entry moves to its copy only if it still points at
/// the original: a record superseded during the compaction stays dead.
extension LogCore {
    /// Compacts now. With `sealActive`, first seals the active segment so its
    /// dead records can be reclaimed too.
    func compact(sealActive: Bool) async throws(OutboxLogError) -> CompactionReport {
        if configuration.readOnly { throw OutboxLogError(.invalidArgument, "the log was opened read-only") }
        try await waitForIndex()
        try await claimCompactionSlot()
        if sealActive {
            // Only worth sealing if it holds something to reclaim.
            do { try await sealActiveSegment(when: { !$0.isClean }) } catch {
                releaseCompaction()
                throw error
            }
        }
        // `compactClaimed` releases the slot itself, however it ends: a
        // second release here could free a slot another compaction had
        // claimed in between.
        return try await runOnOwnThread { () throws(OutboxLogError) -> CompactionReport in try self.compactClaimed() }
    }

    /// Waits for a running compaction (or retention), then claims the slot
    /// that keeps them one at a time.
    func claimCompactionSlot() async throws(OutboxLogError) {
        while true {
            let claimed = try state.withLock { state throws(OutboxLogError) -> Bool in
                if let error = state.isAcceptingWrites { throw error }
                if state.compactionRunning { return false }
                state.compactionRunning = true
                return true
            }
            if claimed { return }
            await waitForCompaction()
        }
    }

    /// A swap committed its intent and then failed: the next open will
    /// finish it or roll it back, and this log cannot know which, so it is
    /// poisoned, as after any failed sync.
    func failAfterCommit(_ error: OutboxLogError) {
        let waiters = state.withLock { poison(error, in: &$0) }
        for waiter in waiters { waiter.resume(returning: .failure(error)) }
    }

    /// Starts a compaction in the background if the sealed segments' dead
    /// share has reached the configured ratio.
    func startAutomaticCompactionIfDue() {
        guard let ratio = configuration.automaticCompactionRatio, !configuration.readOnly else { return }
        let minimum = Int64(configuration.automaticCompactionMinimumBytes ?? configuration.segmentSize)
        let due = state.withLock { state -> Bool in
            // Never once `close()` has begun: it waits only for a compaction
            // already running, and one started by its own closing flush (a
            // roll) would go on touching the files after the lock is gone.
            guard case .open = state.phase, !state.closing, !state.compactionRunning, state.indexLoading == nil else {
                return false
            }
            var total: Int64 = 0
            var dead: Int64 = 0
            for id in state.order where id != state.activeID {
                let usage = state.index.usage[id] ?? SegmentUsage()
                total += usage.totalBytes
                dead += usage.deadBytes
            }
            guard total >= minimum, total > 0, Double(dead) / Double(total) >= ratio else { return false }
            state.compactionRunning = true
            return true
        }
        guard due else { return }
        EngineThread.start("outbox-compact") { [self] in
            do {
                let report = try compactClaimed()
                logger.info("automatic compaction", metadata: ["result": "\(report)"])
            } catch {
                logger.error("automatic compaction failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Waits for a running compaction to finish.
    func waitForCompaction() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let running = state.withLock { state -> Bool in
                guard state.compactionRunning else { return false }
                state.compactionWaiters.append(continuation)
                return true
            }
            if !running { continuation.resume() }
        }
    }

    func releaseCompaction() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.compactionRunning = false
            defer { state.compactionWaiters = [] }
            return state.compactionWaiters
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Makes the active segment sealed (if its usage passes `worthIt`) and
    /// waits until the writer has synced it and created its successor: the
    /// roll is over, or failed (and poisoned the log), before the compaction
    /// (or retention) starts.
    func sealActiveSegment(when worthIt: (SegmentUsage) -> Bool) async throws(OutboxLogError) {
        let sealed = try state.withLock { state throws(OutboxLogError) -> (last: UInt64, successor: UInt32)? in
            if let error = state.isAcceptingWrites { throw error }
            guard let active = state.activeID, worthIt(state.index.usage[active] ?? SegmentUsage()) else {
                return nil
            }
            state.startSegment()
            state.flushRequested = true
            return (state.nextSequence - 1, state.activeID!)
        }
        guard let sealed else { return }
        // The writer syncs the old segment before it creates the new one.
        try await waitUntilCreated(sealed.successor)
        try await waitFor(sealed.last, durable: true)
    }

    /// Blocks the compaction thread until every record up to `sequence` is
    /// durable (the writer syncs it, or has already), or the log fails.
    func waitUntilDurable(_ sequence: UInt64) throws(OutboxLogError) {
        if state.withLock({ sequence <= $0.durableSequence }) { return }
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<Result<Void, OutboxLogError>>(.success(()))
        // The wait itself is async (a continuation the writer resumes); this
        // thread may block, the cooperative pool must not, so it only hops
        // through a task.
        Task {
            do throws(OutboxLogError) {
                try await self.waitFor(sequence, durable: true)
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        try outcome.withLock { $0 }.get()
    }

    func runOnOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws(OutboxLogError) -> T) async throws(OutboxLogError) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, OutboxLogError>, Never>) in
            EngineThread.start("outbox-compact") {
                do throws(OutboxLogError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    // MARK: - The compaction itself (blocking, on its own thread)

    /// Runs with `compactionRunning` claimed; releases it when done.
    private func compactClaimed() throws(OutboxLogError) -> CompactionReport {
        defer { releaseCompaction() }
        let clock = ContinuousClock()
        let start = clock.now

        // 1. Choose the run under the lock.
        guard let plan = state.withLock({ CompactionRun.plan(in: $0) }) else { return CompactionReport() }

        var report = CompactionReport()
        report.inputSegments = plan.inputs.count
        report.bytesBefore = plan.inputs.reduce(0) { $0 + $1.size }
        let swap = SegmentSwap(layout: layout, fileSystem: fileSystem)
        var writer = outputWriter(for: plan)
        var moved: [CompactionRun.Move] = []
        // Set once the intent is renamed into place: from then on the swap
        // will happen, whatever fails next.
        var committed = false

        do throws(OutboxLogError) {
            // 2. Copy the live records.
            for input in plan.inputs where input.usage.liveRecords > 0 {
                try copyLiveRecords(of: input, into: &writer, moved: &moved)
                if state.withLock({ $0.compactionCancelled }) {
                    throw OutboxLogError(.closed, "compaction cancelled: the log is closing")
                }
            }
            let outputs = try writer.finish(needsPlaceholder: plan.needsPlaceholder)

            // The records the copy left behind as dead were superseded by
            // later appends — possibly ones not yet on disk. Deleting the
            // inputs before those are durable would let a power loss take
            // both the old value and the new one: a hole in the history.
            try waitUntilDurable(state.withLock { $0.nextSequence - 1 })

            // 3. Commit.
            try swap.commit(plan.intent(outputs: outputs), committed: &committed)

            // 4. Swap in memory.
            state.withLock { plan.swapIn(outputs, moved: moved, state: &$0) }
            report.outputSegments = outputs.count
            report.bytesAfter = outputs.reduce(0) { $0 + $1.size }
            report.recordsCopied = moved.count
        } catch {
            guard committed else {
                writer.abandon()
                throw error
            }
            // The intent is in place but the directory sync after it failed:
            // the next open will finish the swap if the rename survives, or
            // roll it back if not. Either way it needs the outputs.
            failAfterCommit(error)
            throw error
        }

        // 5. Finish on disk. A failure here leaves the committed intent for
        // the next open to finish; this log cannot know its files any more.
        do {
            try swap.finish(plan.intent(outputs: writer.outputs), segmentSalts: plan.inputSalts)
        } catch {
            failAfterCommit(error)
            throw error
        }
        compactionObserver.withLock { $0 }?()
        // The swap gave the rewritten segments new salts: the old checkpoint
        // no longer describes the log. Replace it while the slot is held.
        if configuration.indexCheckpoints, !state.withLock({ $0.compactionCancelled }) {
            do { try writeIndexCheckpoint() } catch {
                logger.warning("index checkpoint after compaction not written", metadata: ["error": "\(error)"])
            }
        }
        report.duration = clock.now - start
        return report
    }

    /// Writes the run's outputs, each numbered with a segment id taken
    /// under the lock.
    private func outputWriter(for plan: CompactionRun) -> CompactionOutputWriter {
        CompactionOutputWriter(
            layout: layout, fileSystem: fileSystem, segmentSize: configuration.segmentSize,
            runBase: plan.inputs[0].file.header.baseSequence, coverEnd: plan.coverEnd,
            allocateID: { [self] in
                self.state.withLock { state in
                    defer { state.nextSegmentID += 1 }
                    return state.nextSegmentID
                }
            })
    }
}
