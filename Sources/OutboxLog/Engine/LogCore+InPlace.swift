/// Writes in place: a caller waiting for `written` does the one bounded
/// `pwrite` itself when nobody is writing, instead of waking the writer
/// thread and sleeping until it reports.
///
/// Why this is allowed on Swift's cooperative pool (Docs/ARCHITECTURE.md,
/// "Writes in place"): the bytes are already encoded, at most
/// `groupCommitLimit` of them, and `pwrite(2)` into the page cache returns
/// without waiting for the disk or another process — what SQLite NORMAL does
/// on its caller's thread. Syncs, segment creation and directory syncs never
/// run here: they stay on the writer thread.
///
/// One write at a time, in order: whoever writes segment bytes holds the
/// *write token* (``LogState/writeToken``), the writer thread or one caller.
/// A caller takes it only when nothing is queued for the writer (no sealed
/// chunk, no segment to create), so the bytes it takes — the whole open chunk,
/// its own records and any buffered ones before them — are the next bytes of
/// the active segment. A failed write poisons the log exactly as a failure
/// on the writer thread does.
struct InPlaceWrite {
    var file: SegmentFile
    var offset: Int64
    var data: [UInt8]
    var lastSequence: UInt64
}

extension LogCore {
    /// Under the lock: takes the open chunk for a write in place by the
    /// caller if that is allowed now and the chunk holds `sequence`.
    func takeInPlaceWrite(through sequence: UInt64, _ state: inout LogState) -> InPlaceWrite? {
        guard configuration.writesInPlace, state.writeToken == nil, state.isAcceptingWrites == nil,
            !state.stopRequested, state.queue.isEmpty, let chunk = state.openChunk,
            sequence <= chunk.lastSequence, sequence > state.writtenSequence,
            chunk.data.count <= configuration.groupCommitLimit,
            let active = state.activeID, let file = state.slots[active]?.file
        else { return nil }
        state.openChunk = nil
        state.writeToken = .caller
        if state.queue.isEmpty { state.flushRequested = false }
        return InPlaceWrite(file: file, offset: chunk.offset, data: chunk.data, lastSequence: chunk.lastSequence)
    }

    /// Does the write taken by ``takeInPlaceWrite(through:_:)``, then
    /// publishes it under the lock: the written watermark moves, waiters it
    /// satisfied are resumed, and the writer thread is woken only if work
    /// arrived for it meanwhile. Throws the write's error (the log is then
    /// poisoned, and every waiter fails with the same error).
    func finishInPlace(_ write: InPlaceWrite) throws(OutboxLogError) {
        var failure: OutboxLogError?
        do {
            try fileSystem.writeFully(write.file.descriptor, write.data, at: write.offset)
        } catch {
            failure = .io("write failed", error, file: write.file.path, offset: write.offset)
        }
        let byteCount = write.data.count
        // Kept for reuse as it is: emptied when it is taken again, once this
        // copy is gone (emptying a shared buffer would allocate a new one).
        let spare = write.data
        var checkpointMayBeDue = false
        let (finished, wake) = state.withLock {
            state -> ([(UnsafeContinuation<Result<Void, OutboxLogError>, Never>, Result<Void, OutboxLogError>)], Bool) in
            state.writeToken = nil
            if let failure {
                let failed = poison(failure, in: &state).map { ($0, Result<Void, OutboxLogError>.failure(failure)) }
                // A close waiting for the writer must still be told it may stop.
                return (failed, state.stopRequested && state.claimWriterWakeup())
            }
            // The writer thread checks after each of its writes; a log written
            // only in place must reach its periodic index checkpoint too.
            checkpointMayBeDue = configuration.indexCheckpoints
                && state.bytesSinceCheckpoint >= max(configuration.indexCheckpointInterval, state.lastCheckpointSize)
            state.recordWritten(
                segment: write.file.id, end: write.offset + Int64(byteCount), through: write.lastSequence,
                bytes: byteCount, spare: spare)
            var finished = state.takeSatisfiedWaiters()
            for granted in state.grantRoom(maximum: configuration.maximumPendingBytes) {
                finished.append((granted.continuation, .success(())))
            }
            return (finished, state.writerHasWork(configuration) && state.claimWriterWakeup())
        }
        wakeWriter(wake)
        if checkpointMayBeDue { startIndexCheckpointIfDue() }
        for (continuation, result) in finished { continuation.resume(returning: result) }
        if let failure { throw failure }
    }
}

/// Who may write segment bytes now (see ``InPlaceWrite``).
enum WriteTokenHolder {
    case writer
    case caller
}

extension LogState {
    /// Publishes bytes handed to the OS: the segment's written size, the
    /// written watermark, the bytes no longer pending, and the emptied
    /// buffer kept for reuse.
    mutating func recordWritten(segment: UInt32, end: Int64, through last: UInt64, bytes: Int, spare: [UInt8]?) {
        setWrittenSize(end, of: segment)
        writtenSequence = max(writtenSequence, last)
        pendingBytes -= bytes
        if let spare, spareBuffers.count < 4 { spareBuffers.append(spare) }
    }

    /// Sets a segment's written size. Read and written back whole:
    /// `slots[segment]?.writtenSize = size` runs a `_modify` coroutine
    /// whose frame is allocated on the heap, on every write.
    mutating func setWrittenSize(_ size: Int64, of segment: UInt32) {
        guard var slot = slots[segment] else { return }
        slot.writtenSize = size
        slots[segment] = slot
    }

    /// Removes and returns the waiters the watermarks now satisfy, with success.
    mutating func takeSatisfiedWaiters() -> [(UnsafeContinuation<Result<Void, OutboxLogError>, Never>, Result<Void, OutboxLogError>)] {
        var finished: [(UnsafeContinuation<Result<Void, OutboxLogError>, Never>, Result<Void, OutboxLogError>)] = []
        guard !waiters.isEmpty else { return finished }
        var remaining: [Waiter] = []
        for waiter in waiters {
            if waiter.isSatisfied(written: writtenSequence, durable: durableSequence) {
                finished.append((waiter.continuation, .success(())))
            } else {
                remaining.append(waiter)
            }
        }
        waiters = remaining
        return finished
    }

    /// Whether the writer thread has something to do (after a write in
    /// place, which may have kept it asleep while work arrived).
    func writerHasWork(_ configuration: OutboxLog.Configuration) -> Bool {
        if stopRequested || !queue.isEmpty || !creationWaiters.isEmpty || !roomWaiters.isEmpty { return true }
        if openChunk != nil && (flushRequested || pendingBytes >= configuration.bufferedFlushThreshold) { return true }
        return waiters.contains { !$0.isSatisfied(written: writtenSequence, durable: durableSequence) }
    }
}
