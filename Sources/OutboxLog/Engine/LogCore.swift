import Dispatch
import Foundation
import Logging
import OutboxLocking
import SystemPackage

/// The engine behind ``OutboxLog``: one lock over the state, one writer
/// thread that does every write and sync, and a small pool for reads.
final class LogCore: Sendable {
    let layout: DirectoryLayout
    let configuration: OutboxLog.Configuration
    /// What the open found; a background index load adds to it.
    let loadReport: Locked<RecoveryReport>
    var recoveryReport: RecoveryReport { loadReport.withLock { $0 } }
    /// Recovery found the log ending with a marker (it was closed cleanly).
    let recoveredWithMarker: Bool
    /// The client's checkpoint position the open was given, if any.
    let changesAfter: LogPosition?
    /// The keys of the records after ``changesAfter``.
    let changedKeys: Locked<ChangedKeys>
    /// Left once the index is complete (at once if the open built it).
    let indexReady = DispatchGroup()
    /// Signalled when the index load's thread is done with the files.
    let indexLoaderExited = DispatchSemaphore(value: 0)
    let hasIndexLoader: Bool
    /// Whether the log holds the history after ``changesAfter``.
    let holdsHistory: Bool
    /// Told after each compaction (``OutboxLog/observeCompactions(_:)``).
    let compactionObserver = Locked<(@Sendable () -> Void)?>(nil)
    let state: Locked<LogState>
    /// Signalled when the writer thread sleeps and work arrives.
    let writerWakeup = DispatchSemaphore(value: 0)
    let readers: BlockingThreadPool
    /// Where the last pages of `entries(after:limit:)` stopped (see `ScanCursors`).
    let scanCursors = Locked(ScanCursors())
    private let lock: DirectoryLock

    var fileSystem: any FileSystem { configuration.fileSystem }
    var logger: Logger { configuration.logger }

    private init(
        layout: DirectoryLayout, configuration: OutboxLog.Configuration, recovered: RecoveredLog,
        readers: BlockingThreadPool, lock: DirectoryLock, changesAfter: LogPosition?
    ) {
        self.layout = layout
        self.configuration = configuration
        self.loadReport = Locked(recovered.report)
        self.recoveredWithMarker = recovered.endsWithMarker || recovered.nextSequence == 1
        self.changesAfter = changesAfter
        self.changedKeys = Locked(
            recovered.deferredLoad != nil ? .unknown : recovered.changedKeys.map { .known($0) } ?? .unavailable)
        self.hasIndexLoader = recovered.deferredLoad != nil
        self.holdsHistory =
            recovered.deferredLoad == nil
            ? recovered.changedKeys != nil
            : changesAfter?.isHistory(of: recovered.segments, nextSequence: recovered.nextSequence) ?? false
        self.readers = readers
        self.lock = lock
        var slots: [UInt32: SegmentSlot] = [:]
        for file in recovered.segments {
            // Sealed segments are entirely on disk.
            slots[file.id] = SegmentSlot(
                header: file.header, file: file, writtenSize: recovered.readableEnds[file.id] ?? .max,
                knownDamage: recovered.segmentsWithKnownDamage.contains(file.id))
        }
        let last = recovered.nextSequence - 1
        var initial = LogState(
            index: recovered.index, slots: slots, order: recovered.segments.map(\.id),
            nextSegmentID: recovered.nextSegmentID, nextSequence: recovered.nextSequence,
            writtenSequence: last, durableSequence: last)
        initial.lastContentSequence = last
        if let active = recovered.active {
            initial.activeID = active.id
            initial.activeSize = recovered.activeSize
            initial.activeCRCSeed = active.crcSeed
            initial.slots[active.id]!.writtenSize = recovered.activeSize
        }
        if recovered.deferredLoad != nil {
            initial.indexLoading = IndexLoading()
            indexReady.enter()
        }
        // No checkpoint was used: write one soon, so the next open needs less.
        if configuration.indexCheckpoints && recovered.report.indexCheckpoint == nil { initial.bytesSinceCheckpoint = Int.max / 2 }
        state = Locked(initial)
    }

    /// Opens (creating if allowed) and recovers the log in `directory`.
    static func open(
        at directory: FilePath, configuration: OutboxLog.Configuration, changesAfter: LogPosition? = nil
    ) async throws(OutboxLogError) -> LogCore {
        try configuration.validate()
        let readers = BlockingThreadPool(threads: configuration.readerThreads, name: "outbox-io")
        let core: LogCore
        let deferredLoad: DeferredIndexLoad?
        do {
            (core, deferredLoad) = try await readers.run { () throws(OutboxLogError) -> (LogCore, DeferredIndexLoad?) in
                try openBlocking(at: directory, configuration: configuration, readers: readers, changesAfter: changesAfter)
            }
        } catch {
            readers.shutdown()
            throw error
        }
        core.startWriter()
        if let deferredLoad {
            core.startIndexLoad(deferredLoad)
            if !configuration.opensBeforeIndexIsLoaded {
                // The whole index before anything else: an open that returns
                // with it makes its calls in one order, load then marker.
                do { try await core.waitForIndex() } catch {
                    _ = try? await core.close()
                    throw error
                }
            }
        }
        if !configuration.readOnly && !core.recoveredWithMarker {
            // Written (not synced) before the open returns: an open that
            // cannot write fails here, not at some later call, and the
            // file-system calls of an open are the same on every run.
            do {
                try await core.waitFor(core.writeCheckpoint(), durable: false)
            } catch {
                // The open's own write failed: throw what failed it (`.io`,
                // as from any other step of the open), never `.poisoned` —
                // which a caller would get instead if the writer failed
                // before the wait above was registered: the error must not
                // depend on thread timing (a replay would not reproduce it).
                let cause = core.state.withLock { state -> OutboxLogError? in
                    if case .poisoned(let cause) = state.phase { cause } else { nil }
                }
                _ = try? await core.close()
                throw cause ?? error
            }
        }
        return core
    }

    private static func openBlocking(
        at directory: FilePath, configuration: OutboxLog.Configuration, readers: BlockingThreadPool,
        changesAfter: LogPosition?
    ) throws(OutboxLogError) -> (LogCore, DeferredIndexLoad?) {
        let layout = DirectoryLayout(directory: directory)
        let opening = LogDirectoryOpening(
            layout: layout, fileSystem: configuration.fileSystem,
            createIfMissing: configuration.createIfMissing && !configuration.readOnly)
        let (lock, created) = try opening.lock()
        do {
            let recovered = try Recovery(layout: layout, configuration: configuration, changesAfter: changesAfter).run()
            configuration.logger.debug(
                "opened log",
                metadata: [
                    "directory": "\(directory)", "segments": "\(recovered.report.segments)",
                    "records": "\(recovered.report.records)", "clean": "\(recovered.report.isClean)",
                ])
            let core = LogCore(
                layout: layout, configuration: configuration, recovered: recovered, readers: readers, lock: lock,
                changesAfter: changesAfter)
            return (core, recovered.deferredLoad)
        } catch {
            opening.abandon(lock, created: created)
            throw error
        }
    }

    // MARK: - Closing

    /// Writes and syncs everything, stops the writer, and releases the files
    /// and the directory lock. Idempotent.
    func close() async throws(OutboxLogError) {
        let alreadyClosing = state.withLock { state -> Bool in
            if state.closing { return true }
            state.closing = true
            state.compactionCancelled = true
            return false
        }
        if alreadyClosing {
            await waitUntilClosed()
            return
        }
        // An index load still running stops between two segments.
        if hasIndexLoader { _ = try? await readers.run { () throws(OutboxLogError) in self.stopIndexLoad() } }
        await waitForCompaction()
        scanCursors.withLock { $0.removeAll() }  // they may hold segment files open
        let checkpoint = await closingCheckpoint()
        if case .success = checkpoint, configuration.indexCheckpoints, !configuration.readOnly {
            // Everything is durable and nothing appends any more: the next
            // open reads this and the newest segment only.
            _ = try? await readers.run { () throws(OutboxLogError) in try self.writeIndexCheckpoint() }
        }
        let result = await withCheckedContinuation { continuation in
            let wake = state.withLock { state -> Bool in
                state.stopRequested = true
                state.writerExit = continuation
                defer { state.writerSleeping = false }
                return state.writerSleeping
            }
            if wake { writerWakeup.signal() }
        }
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.phase = .closed
            state.slots = [:]  // closes the segment files
            state.index = LogIndex()
            defer { state.closeWaiters = [] }
            return state.closeWaiters
        }
        // A page that ran while the log closed may have saved one since.
        scanCursors.withLock { $0.removeAll() }
        readers.shutdown()
        lock.release()
        for waiter in waiting { waiter.resume() }
        logger.debug("closed log", metadata: ["directory": "\(layout.directory)"])
        try checkpoint.get()
        try result.get()
    }

    /// At close: sync everything, then write a marker vouching for it and
    /// sync that too, so a later bit flip anywhere before it is reported as
    /// corruption, never cut as if it were a torn tail.
    private func closingCheckpoint() async -> Result<Void, OutboxLogError> {
        guard !configuration.readOnly else { return .success(()) }
        do throws(OutboxLogError) {
            let last = state.withLock { $0.nextSequence - 1 }
            try await waitFor(last, durable: true)
            let marker = state.withLock { state -> UInt64? in
                guard case .open = state.phase, !state.lastFrameIsMarker else { return nil }
                return state.encodeMarker(configuration: configuration)
            }
            if let marker { try await waitFor(marker, durable: true) }
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// At open after a crash: everything recovered was synced by recovery,
    /// so a marker can vouch for it. Returns the marker's sequence number.
    func writeCheckpoint() -> UInt64 {
        let (marker, wake) = state.withLock { state -> (UInt64, Bool) in
            let marker = state.encodeMarker(configuration: configuration)
            state.flushRequested = true
            return (marker, state.claimWriterWakeup())
        }
        wakeWriter(wake)
        return marker
    }

    /// Starts shutting down without waiting: used when the last reference
    /// to an ``OutboxLog`` goes away without `close()`.
    func closeInBackground() {
        let core = self
        Task.detached { try? await core.close() }
    }

    private func waitUntilClosed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let closed = state.withLock { state -> Bool in
                if case .closed = state.phase { return true }
                state.closeWaiters.append(continuation)
                return false
            }
            if closed { continuation.resume() }
        }
    }

    // MARK: - Poisoning

    /// Records a failed write or sync: from now on every operation fails
    /// until the log is reopened, because what reached the disk is unknown.
    /// Returns the waiters to fail: appends and barriers waiting for the
    /// writer, and appends waiting for room.
    func poison(_ error: OutboxLogError, in state: inout LogState) -> [UnsafeContinuation<Result<Void, OutboxLogError>, Never>] {
        if case .open = state.phase {
            state.phase = .poisoned(error)
            logger.critical(
                "log poisoned: a write or sync failed; reopen to recover",
                metadata: ["error": "\(error)", "directory": "\(layout.directory)"])
        }
        state.queue.removeAll()
        state.openChunk = nil
        state.pendingBytes = 0
        defer {
            state.waiters.removeAll()
            state.roomWaiters.removeAll()
            state.creationWaiters.removeAll()
        }
        return state.waiters.map(\.continuation) + state.roomWaiters.map(\.continuation)
            + state.creationWaiters.map(\.continuation)
    }

    // MARK: - Statistics

    var statistics: LogStatistics {
        state.withLock { state in
            var total: Int64 = 0
            var live: Int64 = 0
            for id in state.order {
                let usage = state.index.usage[id] ?? SegmentUsage()
                total += usage.totalBytes + Int64(SegmentHeader.size)
                live += usage.liveBytes
            }
            var statistics = LogStatistics(
                segments: state.order.count, totalBytes: total, liveBytes: live,
                deadBytes: total - live - Int64(state.order.count * SegmentHeader.size),
                liveKeys: state.index.entries.count, nextSequence: state.nextSequence,
                writtenSequence: state.writtenSequence, durableSequence: state.durableSequence,
                pendingBytes: state.pendingBytes, reservedBytes: state.reservedBytes, syncs: state.syncs,
                compactions: state.compactions)
            statistics.nextRemovalAt = Self.nextRemoval(in: state)
            return statistics
        }
    }
}
