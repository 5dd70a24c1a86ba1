import Dispatch
import OutboxLocking

/// The index while an open's checkpoint load runs (``IndexLoader``).
struct IndexLoading {
    /// Records appended since the open, to index after the loaded ones, in order.
    var pending: [PendingIndexUpdate] = []
    /// Callers waiting for the index.
    var waiters: [UnsafeContinuation<Result<Void, OutboxLogError>, Never>] = []
    /// `close()` began: the load stops between segments.
    var cancelled = false
}

struct PendingIndexUpdate {
    var kind: FrameKind
    var key: LogKey
    var location: Location
    var expiry: Int64?
}

/// What the client's checkpoint position turned into (``OutboxLog/changedKeys()``).
enum ChangedKeys: Sendable {
    /// The index is still loading.
    case unknown
    /// Keys of every record after the position, as the open found the log.
    case known(Set<LogKey>)
    /// Not asked, or the log no longer holds the history after the position.
    case unavailable
}

/// An open with a checkpoint returns before the index is complete
/// (`Configuration.opensBeforeIndexIsLoaded`): appends index their records
/// into ``IndexLoading/pending``, the load runs on the `outbox-index`
/// thread, and what needs the index waits for it here.
extension LogCore {
    func startIndexLoad(_ load: DeferredIndexLoad) {
        let history = holdsHistory
        let loader = IndexLoader(
            load: load, fileSystem: fileSystem, logger: logger, changesAfter: history ? changesAfter?.sequence : nil,
            cancelled: { [state] in state.withLock { $0.indexLoading?.cancelled ?? true } })
        EngineThread.start("outbox-index") { [self] in
            let clock = ContinuousClock()
            let start = clock.now
            let result = Result { () throws(OutboxLogError) -> IndexLoader.Loaded? in try loader.run() }
            finishIndexLoad(result, history: history, took: clock.now - start)
            indexLoaderExited.signal()
        }
    }

    private func finishIndexLoad(_ result: Result<IndexLoader.Loaded?, OutboxLogError>, history: Bool, took: Duration) {
        var resume: [(UnsafeContinuation<Result<Void, OutboxLogError>, Never>, Result<Void, OutboxLogError>)] = []
        state.withLock { state in
            guard let loading = state.indexLoading else { return }
            state.indexLoading = nil
            switch result {
            case .success(let loaded?):
                var index = loaded.index
                for update in loading.pending { index.apply(update.kind, key: update.key, at: update.location, expiry: update.expiry) }
                for id in state.order where index.usage[id] == nil { index.usage[id] = SegmentUsage() }
                state.index = index
                if loaded.rejected != nil { state.bytesSinceCheckpoint = Int.max / 2 }
                resume = loading.waiters.map { ($0, .success(())) }
                changedKeys.withLock { $0 = history ? .known(loaded.changedKeys) : .unavailable }
                loadReport.withLock { report in
                    report.liveKeys = index.entries.count
                    report.records += loaded.records
                    report.checkpointRejected = loaded.rejected ?? report.checkpointRejected
                    if loaded.rejected != nil { report.indexCheckpoint = nil }
                    report.duration += took
                }
            case .success(nil):
                resume = loading.waiters.map { ($0, .failure(.closed())) }
            case .failure(let error):
                logger.critical(
                    "loading the index after the open failed", metadata: ["error": "\(error)", "directory": "\(layout.directory)"])
                // Whoever waited for the index gets the damage itself; later
                // calls find the log poisoned by it.
                resume = loading.waiters.map { ($0, .failure(error)) }
                    + poison(error, in: &state).map { ($0, .failure(.poisoned(by: error))) }
            }
        }
        if case .failure(let error) = result, error.code == .corruption {
            // The next open must not trust the checkpoint over the damage: it
            // reads the whole log and reports it (or salvage repairs it).
            try? fileSystem.removeFile(layout.indexCheckpointFile)
        }
        for (continuation, outcome) in resume { continuation.resume(returning: outcome) }
        indexReady.leave()
    }

    /// Waits until the index is complete (at once if it is).
    func waitForIndex() async throws(OutboxLogError) {
        guard hasIndexLoader else { return }
        try await park { state, continuation in
            guard state.indexLoading != nil else { return nil }
            state.indexLoading!.waiters.append(continuation)
            return .success(false)
        }
    }

    /// Blocks the calling thread until the index is complete: for the
    /// synchronous calls (`contains`, `keys`, `submit` of an annotation).
    func waitForIndexBlocking() {
        guard hasIndexLoader, state.withLock({ $0.indexLoading != nil }) else { return }
        indexReady.wait()
    }

    var isIndexLoaded: Bool { state.withLock { $0.indexLoading == nil } }

    /// The last record appended that is not a marker, and the segments,
    /// for a client's checkpoint (see ``LogState/lastContentSequence``).
    var position: LogPosition {
        state.withLock { state in
            LogPosition(
                sequence: state.lastContentSequence,
                segments: state.order.compactMap { id in
                    state.slots[id].map { LogPosition.Segment(base: $0.header.baseSequence, salt: $0.header.salt) }
                })
        }
    }

    /// Stops a running load and waits until its thread is done with the files.
    func stopIndexLoad() {
        let running = state.withLock { state -> Bool in
            guard state.indexLoading != nil else { return false }
            state.indexLoading!.cancelled = true
            return true
        }
        if running || hasIndexLoader {
            indexLoaderExited.wait()
            indexLoaderExited.signal()
        }
    }
}
