import Dispatch
import Foundation
import OutboxLocking
import SystemPackage

/// The writer thread: the only code that writes segment bytes or syncs.
///
/// Group commit falls out of the design. While the writer is inside one
/// `fdatasync`, appends keep encoding into the next chunk; when it comes
/// back it takes everything that arrived (up to `groupCommitLimit` bytes),
/// writes it with one `pwrite`, and makes it durable with one sync. Every
/// waiter in the group gets that sync's result — success or the error.
extension LogCore {
    private struct Work {
        var chunks: [WriteChunk] = []
        var bytes = 0
        /// The last record in `chunks`, if they hold any.
        var lastSequence: UInt64?
        /// Everything up to here was written before this work was taken.
        var writtenBefore: UInt64 = 0
        var sync = false
        var stopping = false
        /// The log is poisoned: an earlier work failed, and what it wrote
        /// was never published to the state.
        var afterFailure = false
    }

    func startWriter() {
        // Read the segment to append to now, not when the thread first runs:
        // by then an append may already have started a new segment.
        let target = state.withLock { state in state.activeID.flatMap { state.slots[$0]?.file } }
        // Handed over in a box the writer empties: the thread's closure lives
        // as long as the thread, and must not keep a segment file open.
        let handoff = Locked(target)
        EngineThread.start("outbox-writer") { [self] in self.writerLoop(handoff: handoff) }
    }

    private func writerLoop(handoff: Locked<SegmentFile?>) {
        var target = handoff.withLock { $0.take() }
        var pacing = GroupPacing()
        var allocated = AllocatedAhead()
        while true {
            gatherDurableWaiters(&pacing)
            guard var work = nextWork(&pacing) else {
                writerWakeup.wait()
                continue
            }
            let syncStarted = work.sync ? ContinuousClock.now : nil
            let groupSize = work.sync ? state.withLock { Self.durableWaiters(in: $0) } : 0
            let outcome = perform(work, target: &target, allocated: &allocated)
            if let syncStarted { pacing.record(group: groupSize, took: syncStarted.duration(to: .now)) }
            let spares = Self.emptiedBuffers(&work)
            var finished: [(UnsafeContinuation<Result<Void, OutboxLogError>, Never>, Result<Void, OutboxLogError>)] = []
            var exit: CheckedContinuation<Result<Void, OutboxLogError>, Never>?
            let rolled = state.withLock { state -> Bool in
                state.writeToken = nil
                switch outcome {
                case .success(let done):
                    for (id, file) in done.created { state.slots[id]?.file = file }
                    state.creationWaiters.removeAll { waiter in
                        guard state.slots[waiter.segment]?.file != nil else { return false }
                        finished.append((waiter.continuation, .success(())))
                        return true
                    }
                    for (id, size) in done.writtenSizes { state.setWrittenSize(size, of: id) }
                    if let last = work.lastSequence { state.writtenSequence = max(state.writtenSequence, last) }
                    if let synced = done.syncedThrough {
                        state.durableSequence = max(state.durableSequence, synced)
                        state.syncs += 1
                    }
                    state.pendingBytes -= work.bytes
                    for buffer in spares where state.spareBuffers.count < 4 { state.spareBuffers.append(buffer) }
                    finished += state.takeSatisfiedWaiters()
                    // The bytes just written made room for appends waiting for it.
                    for granted in state.grantRoom(maximum: configuration.maximumPendingBytes) {
                        finished.append((granted.continuation, .success(())))
                    }
                case .failure(let error):
                    finished = poison(error, in: &state).map { ($0, .failure(error)) }
                }
                if work.stopping {
                    exit = state.writerExit
                    state.writerExit = nil
                }
                if case .success(let done) = outcome { return !done.created.isEmpty }
                return false
            }
            // Claim a due compaction before acknowledging, so a caller whose
            // append returned can rely on it having been started.
            if rolled && !work.stopping { startAutomaticCompactionIfDue() }
            if !work.stopping { startIndexCheckpointIfDue() }
            Self.resume(finished, inOneJob: !work.stopping)
            if work.stopping {
                // Let go of the segment file before close() is told the writer
                // is done: its last release closes the descriptor, and close()
                // promises no file is touched after it returns.
                target = nil
                if case .failure(let error) = outcome { exit?.resume(returning: .failure(error)) } else {
                    exit?.resume(returning: .success(()))
                }
                return
            }
        }
    }

    /// The next work, or `nil` to sleep. After a sync that served a lone
    /// producer, it first looks for the next append for a moment (a
    /// fraction of that sync's time) without sleeping: that producer, just
    /// resumed, usually appends again within microseconds, and an append
    /// that finds the writer awake wakes nobody — on this project's VMs a
    /// wake-up of a sleeping thread costs tens of microseconds, against a
    /// sync of a few hundred (Docs/ARCHITECTURE.md, "Durable, one producer").
    /// A look that finds nothing pauses looking for a while (``GroupPacing``).
    private func nextWork(_ pacing: inout GroupPacing) -> Work? {
        if let linger = pacing.linger {
            let deadline = ContinuousClock.now.advanced(by: linger)
            repeat {
                if let work = state.withLock({ state -> Work? in
                    let work = takeWork(&state)
                    if work == nil { state.writerSleeping = false }  // still awake: appends need not signal
                    return work
                }) {
                    pacing.lingerEnded(foundWork: true)
                    return work
                }
                sched_yield()
            } while ContinuousClock.now < deadline
            pacing.lingerEnded(foundWork: false)
        }
        return state.withLock { takeWork(&$0) }
    }

    /// Durable waiters not yet satisfied.
    static func durableWaiters(in state: LogState) -> Int {
        var count = 0
        for waiter in state.waiters where waiter.durable && waiter.sequence > state.durableSequence { count += 1 }
        return count
    }

    /// Takes the written chunks' buffers out of `work`, emptied but with
    /// their capacity, so appends can reuse them.
    private static func emptiedBuffers(_ work: inout Work) -> [[UInt8]] {
        var chunks = work.chunks
        work.chunks = []
        var buffers: [[UInt8]] = []
        while let chunk = chunks.popLast() {
            guard case .bytes(_, _, var data, _) = consume chunk else { continue }
            data.removeAll(keepingCapacity: true)
            buffers.append(data)
        }
        return buffers
    }

    /// Decides under the lock what the writer does next, taking the write
    /// token if it does anything; `nil` means sleep.
    private func takeWork(_ state: inout LogState) -> Work? {
        // A caller is writing in place: it wakes the writer when it is done
        // if there is work (`finishInPlace`).
        if state.writeToken == .caller {
            state.writerSleeping = true
            return nil
        }
        guard let work = chooseWork(&state) else { return nil }
        state.writeToken = .writer
        return work
    }

    private func chooseWork(_ state: inout LogState) -> Work? {
        let stopping = state.stopRequested
        if case .poisoned = state.phase {
            if stopping { return Work(stopping: true, afterFailure: true) }
            state.writerSleeping = true
            return nil
        }
        var needsWrite = false
        var needsDurable = false
        for waiter in state.waiters {
            if waiter.durable {
                if waiter.sequence > state.durableSequence { needsDurable = true }
            } else if waiter.sequence > state.writtenSequence {
                needsWrite = true
            }
        }
        let hasPending = !state.queue.isEmpty || state.openChunk != nil
        if needsWrite && !hasPending {
            // A waiter for bytes that will never come would wait forever.
            // Every path that drops pending bytes fails their waiters, so
            // this is a bug; fail loudly rather than hang.
            let error = OutboxLogError(.io, "internal error: a waiter for records that are not pending")
            let stranded = state.waiters.filter { $0.sequence > state.writtenSequence }
            state.waiters.removeAll { $0.sequence > state.writtenSequence }
            for waiter in stranded { waiter.continuation.resume(returning: .failure(error)) }
            logger.critical("\(error)")
            return chooseWork(&state)
        }
        let writeNow =
            hasPending
            && (needsWrite || needsDurable || stopping || state.flushRequested || !state.roomWaiters.isEmpty
                || state.pendingBytes >= configuration.bufferedFlushThreshold)
        if !writeNow && !needsDurable && !stopping {
            state.writerSleeping = true
            return nil
        }
        var work = Work(writtenBefore: state.writtenSequence, stopping: stopping)
        if writeNow {
            let limit = stopping ? Int.max : configuration.groupCommitLimit
            while work.bytes < limit {
                if state.queue.isEmpty { state.sealOpenChunk() }
                // Whole chunks only, and never past the limit (but always at
                // least one, however large).
                guard let chunk = state.queue.first, work.chunks.isEmpty || work.bytes + chunk.byteCount <= limit else {
                    break
                }
                state.queue.removeFirst()
                if case .bytes(_, _, _, let last) = chunk { work.lastSequence = last }
                work.bytes += chunk.byteCount
                work.chunks.append(chunk)
            }
            if state.queue.isEmpty && state.openChunk == nil { state.flushRequested = false }
        }
        let coveredThrough = work.lastSequence ?? state.writtenSequence
        if stopping {
            work.sync = coveredThrough > state.durableSequence
        } else {
            work.sync = state.waiters.contains {
                $0.durable && $0.sequence > state.durableSequence && $0.sequence <= coveredThrough
            }
        }
        if work.chunks.isEmpty && !work.sync && !stopping {
            state.writerSleeping = true
            return nil
        }
        return work
    }

    private struct Done {
        var created: [(UInt32, SegmentFile)] = []
        var writtenSizes: [UInt32: Int64] = [:]
        var syncedThrough: UInt64?
    }

    /// Does the I/O of one work item, without the lock.
    private func perform(
        _ work: Work, target: inout SegmentFile?, allocated: inout AllocatedAhead
    ) -> Result<Done, OutboxLogError> {
        var done = Done()
        var writtenThrough = work.writtenBefore
        do throws(OutboxLogError) {
            for chunk in work.chunks {
                switch chunk {
                case .create(let id, let header):
                    // Seal the previous segment: it is synced before the new
                    // one exists, so only the newest segment can ever have a
                    // torn tail.
                    if let previous = target {
                        // Space allocated ahead and never written goes before
                        // the seal: only the newest segment may end in zeros.
                        try trimAllocatedAhead(previous, writtenUpTo: done.writtenSizes[previous.id], allocated)
                        try sync(previous)
                        done.syncedThrough = writtenThrough
                    }
                    let descriptor = try fileSystem.createSegment(header, layout: layout)
                    let file = SegmentFile(
                        id: id, header: header, path: layout.segmentFile(base: header.baseSequence),
                        descriptor: descriptor, fileSystem: fileSystem)
                    done.created.append((id, file))
                    done.writtenSizes[id] = Int64(SegmentHeader.size)
                    target = file
                case .bytes(let segment, let offset, let data, let lastSequence):
                    guard let file = target, file.id == segment else {
                        throw OutboxLogError(.io, "internal error: bytes for segment \(segment) with no file to write them to")
                    }
                    do {
                        try fileSystem.writeFully(file.descriptor, data, at: offset)
                    } catch {
                        throw .io("write failed", error, file: file.path, offset: offset)
                    }
                    done.writtenSizes[segment] = offset + Int64(data.count)
                    writtenThrough = lastSequence
                }
            }
            if work.stopping, let file = target {
                // A clean close leaves no zeros after the records either. If
                // the cut fails, the segment stays the newest, where zeros
                // after the records are space allocated ahead: no harm.
                //
                // Not after a failure: the failed work's writes were never
                // published, so the state's written size may end before
                // records that are on disk — and a roll that failed after
                // renaming the next segment into place has sealed this one
                // with them (cut them, and the next segment starts after a
                // gap). Zeros left here are harmless: this segment was the
                // newest one zero-filled, and a sealed one was cut before
                // its seal.
                if !work.afterFailure {
                    try? trimAllocatedAhead(file, writtenUpTo: done.writtenSizes[file.id], allocated)
                }
            } else if let file = target, let dataEnd = done.writtenSizes[file.id] {
                // Before the sync, so that it carries the zeros too.
                allocateAhead(in: file, dataEnd: dataEnd, &allocated)
            }
            if work.sync {
                if let file = target { try sync(file) }
                done.syncedThrough = writtenThrough
            }
            return .success(done)
        } catch {
            return .failure(error)
        }
    }

    /// One flush to stable storage. Never retried: after a failure the
    /// kernel may have dropped the dirty pages and a retry would lie.
    private func sync(_ file: SegmentFile) throws(OutboxLogError) {
        do {
            try fileSystem.synchronize(file.descriptor)
        } catch {
            throw .io("sync failed; the data may not be on disk", error, file: file.path)
        }
    }

    /// Wakes the writer if it sleeps. Call after changing state it reads.
    func wakeWriter(_ shouldWake: Bool) {
        if shouldWake { writerWakeup.signal() }
    }
}

extension LogState {
    /// Marks the writer awake; returns whether the caller must signal it.
    /// Never while a caller writes in place: it wakes the writer when it is
    /// done, if there is work (``writerHasWork(_:)``).
    mutating func claimWriterWakeup() -> Bool {
        guard writerSleeping, writeToken != .caller else { return false }
        writerSleeping = false
        return true
    }
}
