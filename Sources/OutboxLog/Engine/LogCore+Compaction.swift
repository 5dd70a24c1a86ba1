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

    private struct Input {
        var file: SegmentFile
        var usage: SegmentUsage
        var size: Int64
    }

    private struct Moved {
        var key: LogKey
        var kind: FrameKind
        var from: Location
        var to: Location
        var expiry: Int64?
    }

    /// Runs with `compactionRunning` claimed; releases it when done.
    private func compactClaimed() throws(OutboxLogError) -> CompactionReport {
        defer { releaseCompaction() }
        let clock = ContinuousClock()
        let start = clock.now

        // 1. Choose the run under the lock.
        let plan = state.withLock { state -> (inputs: [Input], coverEnd: UInt64, atStart: Bool, followedOnDisk: Bool)? in
            let sealed = state.order.filter { $0 != state.activeID }
            guard let first = sealed.firstIndex(where: { !(state.index.usage[$0] ?? SegmentUsage()).isClean }) else {
                return nil
            }
            var inputs: [Input] = []
            for id in sealed[first...] {
                guard let slot = state.slots[id], let file = slot.file else { break }
                let usage = state.index.usage[id] ?? SegmentUsage()
                let size = Int64(SegmentHeader.size) + usage.totalBytes
                // A segment sealed by a roll at append time may still have
                // bytes waiting for the writer (buffered appends): the run
                // ends before it, or the copy would read past its end.
                guard slot.writtenSize >= size else { break }
                inputs.append(Input(file: file, usage: usage, size: size))
            }
            guard !inputs.isEmpty else { return nil }
            let lastInput = state.order.firstIndex(of: inputs.last!.file.id)!
            let follower = lastInput + 1 < state.order.count ? state.slots[state.order[lastInput + 1]] : nil
            let coverEnd = follower?.header.baseSequence ?? state.nextSequence
            return (inputs, coverEnd, first == 0 && sealed.first == state.order.first, follower?.file != nil)
        }
        guard let plan else { return CompactionReport() }

        var report = CompactionReport()
        report.inputSegments = plan.inputs.count
        report.bytesBefore = plan.inputs.reduce(0) { $0 + $1.size }
        let swap = SegmentSwap(layout: layout, fileSystem: fileSystem)
        var writer = CompactionOutputWriter(
            layout: layout, fileSystem: fileSystem, segmentSize: configuration.segmentSize,
            runBase: plan.inputs[0].file.header.baseSequence, coverEnd: plan.coverEnd,
            allocateID: { [self] in
                self.state.withLock { state in
                    defer { state.nextSegmentID += 1 }
                    return state.nextSegmentID
                }
            })
        var moved: [Moved] = []
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
            // An empty run in the middle of the log still needs a segment to
            // carry its sequence range, or the next open would see a gap;
            // and one that no segment on disk follows carries the sequence
            // floor (Docs/FORMAT.md), or a crash could restart the numbers.
            let outputs = try writer.finish(needsPlaceholder: !plan.atStart || !plan.followedOnDisk)

            // The records the copy left behind as dead were superseded by
            // later appends — possibly ones not yet on disk. Deleting the
            // inputs before those are durable would let a power loss take
            // both the old value and the new one: a hole in the history.
            try waitUntilDurable(state.withLock { $0.nextSequence - 1 })

            // 3. Commit.
            let intent = CompactionIntent(
                inputs: plan.inputs.map { .init(base: $0.file.header.baseSequence, salt: $0.file.header.salt) },
                outputs: outputs.map { .init(base: $0.header.baseSequence, salt: $0.header.salt) },
                setAsideInputs: false)
            try swap.commit(intent, committed: &committed)

            // 4. Swap in memory.
            let inputIDs = Set(plan.inputs.map(\.file.id))
            state.withLock { state in
                for item in moved {
                    // Every copy counts for retention, live or superseded
                    // meanwhile: its bytes are in the output either way.
                    state.index.usage[item.to.segment, default: SegmentUsage()].count(expiry: item.expiry)
                    guard var entry = state.index.entries[item.key] else { continue }
                    switch item.kind {
                    case .value where entry.value == item.from: entry.value = item.to
                    case .annotation where entry.annotation == item.from: entry.annotation = item.to
                    default: continue
                    }
                    state.index.entries[item.key] = entry
                    state.index.usage[item.to.segment, default: SegmentUsage()].liveBytes += Int64(item.to.length)
                    state.index.usage[item.to.segment, default: SegmentUsage()].liveRecords += 1
                }
                for output in outputs {
                    state.index.usage[output.id, default: SegmentUsage()].totalBytes = output.size - Int64(SegmentHeader.size)
                    state.index.usage[output.id, default: SegmentUsage()].records = output.records
                    state.slots[output.id] = SegmentSlot(header: output.header, file: output.file, writtenSize: .max)
                }
                for id in inputIDs {
                    state.slots[id] = nil
                    state.index.usage[id] = nil
                }
                let at = state.order.firstIndex(of: plan.inputs[0].file.id)!
                state.order.removeAll { inputIDs.contains($0) }
                state.order.insert(contentsOf: outputs.map(\.id), at: at)
                state.compactions += 1
            }
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
        var salts: [UInt64: UInt64?] = [:]
        for input in plan.inputs { salts[input.file.header.baseSequence] = input.file.header.salt }
        do {
            try swap.finish(
                CompactionIntent(
                    inputs: plan.inputs.map { .init(base: $0.file.header.baseSequence, salt: $0.file.header.salt) },
                    outputs: writer.outputs.map { .init(base: $0.header.baseSequence, salt: $0.header.salt) },
                    setAsideInputs: false),
                segmentSalts: salts)
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

    /// Scans one input segment and copies each record the index still
    /// points at into the output.
    private func copyLiveRecords(
        of input: Input, into writer: inout CompactionOutputWriter, moved: inout [Moved]
    ) throws(OutboxLogError) {
        let file = input.file
        let reader = ChunkedFileReader(
            fileSystem: fileSystem, descriptor: file.descriptor, path: file.path, fileSize: input.size)
        let scanner = SegmentScanner(reader: reader, header: file.header)
        var batch: [ScannedRecord] = []
        var failure: OutboxLogError?
        func drain() {
            guard failure == nil, !batch.isEmpty else { return }
            let live = state.withLock { state in
                batch.filter { record in
                    state.index.isLive(
                        record.kind, key: record.key,
                        at: Location(segment: file.id, offset: UInt32(record.offset), length: UInt32(record.length)))
                }
            }
            do throws(OutboxLogError) {
                for record in live {
                    let frame = try reader.window(at: record.offset, count: record.length)
                    if let damage = RecordFrame.reverify(frame, crcSeed: file.crcSeed, sequence: record.sequence) {
                        throw OutboxLogError.corruption(
                            "a live record no longer verifies when copied (\(damage)); the compaction stopped",
                            file: file.path, offset: record.offset, damage: .noLongerVerifies(damage))
                    }
                    let to = try writer.append(frame: frame, sequence: record.sequence)
                    moved.append(
                        Moved(
                            key: record.key, kind: record.kind,
                            from: Location(segment: file.id, offset: UInt32(record.offset), length: UInt32(record.length)),
                            to: to, expiry: record.expiry))
                }
            } catch {
                failure = error
            }
            batch.removeAll(keepingCapacity: true)
        }
        let run = try scanner.scanRun(
            from: Int64(SegmentHeader.size), previous: nil, resumingAfterDamage: false,
            visit: { record in
                guard record.kind == .value || record.kind == .annotation else { return }
                batch.append(record)
                if batch.count >= 512 { drain() }
            })
        drain()
        if let failure { throw failure }
        if let stop = run.stop {
            throw .corruption(
                "segment no longer verifies: \(stop.damage)", file: file.path, offset: stop.frame, damage: stop.damage)
        }
    }
}

