import Foundation
import OutboxLog
import OutboxModel

/// A store reopened from its checkpoint answers before its scheduler is
/// loaded: the load (the checkpoint, then the entries changed after it)
/// runs in the background, every call that needs the scheduler waits for
/// it, and an enqueue that needs nothing of the queue is admitted at once.
struct StoreLoading: Sendable {
    /// The sequence number the next entry admitted while loading gets: above
    /// every entry the queue can hold (``StoreCore/earlySequence(checkpoint:logNext:)``).
    var nextSequence: UInt64
    /// Entries admitted while loading, in order, for the loaded scheduler.
    var admitted: [AdmittedEntry] = []
    var waiters: [CheckedContinuation<Void, Never>] = []
    /// The load, until it begins: when the open is done, or sooner if a
    /// step of the open waits for it (``StoreCore/beginLoad()``).
    var pending: PendingLoad?

    /// The pending load, which is then no longer pending.
    mutating func takePending() -> PendingLoad? {
        defer { pending = nil }
        return pending
    }
}

/// What a store reopened from its checkpoint loads, and from where.
struct PendingLoad: Sendable {
    var checkpoint: StoreCheckpoint
    var log: OutboxLog
    var format: RecordFormat
    var openedAt: Int64
}

/// An entry admitted while the store was loading.
struct AdmittedEntry: Sendable {
    var metadata: EntryMetadata
    var scope: String?
    var type: String
}

extension StoreCore {
    /// The first sequence number for entries admitted while loading, given
    /// the checkpoint's next sequence number and position and the log's next
    /// sequence number at the open. Every entry enqueued after the checkpoint
    /// took one entry number and at least one log record, so none holds a
    /// number at or above `checkpoint + (logNext − position − 1)`; and the
    /// loaded scheduler never counts below the log's next number either.
    /// `nil` if that number would pass ``EntryMetadata/sequenceLimit``: no
    /// store gets there, so the checkpoint or the log is not to be believed
    /// (the store then reads every entry).
    static func earlySequence(checkpoint: StoreCheckpoint, logNext: UInt64) -> UInt64? {
        let recordsSince = logNext > checkpoint.position.sequence ? logNext - checkpoint.position.sequence - 1 : 0
        let (early, overflow) = checkpoint.nextSequence.addingReportingOverflow(recordsSince)
        guard !overflow, early <= EntryMetadata.sequenceLimit else { return nil }
        return max(early, logNext)
    }

    /// Whether `request` can be admitted without the loaded queue: nothing
    /// in it can be a duplicate or depend on what the queue holds.
    func admitsWhileLoading(_ request: OutboxEnqueueRequest) -> Bool {
        request.idempotencyKey == nil && request.coalescingKey == nil && request.dependencies.isEmpty
            && configuration.maximumEntries == nil && configuration.maximumBytes == nil
    }

    /// Begins the load the open prepared (``StoreLoading/pending``), if it
    /// has not begun. The open calls this as it returns, not when it
    /// prepares the load: the load's threads use every core there is, and
    /// the open's last steps, each a hop to another thread, would wait
    /// behind them (milliseconds on two cores, longer than the steps).
    func beginLoad() {
        guard loadsInBackground, let pending = state.withLock({ $0.loading?.takePending() }) else { return }
        load(pending)
    }

    /// Loads the scheduler from the checkpoint (or, if it turns out
    /// unusable, from every entry) in the background, then installs it.
    private func load(_ pending: PendingLoad) {
        let (checkpoint, log, format, openedAt) = (pending.checkpoint, pending.log, pending.format, pending.openedAt)
        guard let checkpointFile else { return }
        let task = Task.detached { [self] in
            do throws(OutboxError) {
                var scheduler = Scheduler(partition: partition, configuration: configuration)
                var floor = try await StoreLoad.fromCheckpoint(
                    checkpoint, file: checkpointFile.path, fileSystem: checkpointFile.fileSystem, log: log,
                    into: &scheduler, format: format)
                let fellBack = floor == nil
                if floor == nil {
                    scheduler = Scheduler(partition: partition, configuration: configuration)
                    floor = try await StoreLoad.full(log, into: &scheduler, format: format)
                }
                if Task.isCancelled { throw OutboxError(.closed, "the store was closed while it loaded") }
                let sequenceFloor = max(floor ?? 0, log.statistics.nextSequence)
                let (loaded, changes) = try await offThePool { [scheduler] () throws(OutboxError) -> (Scheduler, StoreChanges) in
                    var scheduler = scheduler
                    let changes = scheduler.finishLoading(now: openedAt, sequenceFloor: sequenceFloor)
                    return (scheduler, changes)
                }
                state.withLock { $0.loadedFrom = fellBack ? .everyEntry : .checkpoint }
                await completeLoad(loaded, changes: changes)
                if fellBack { writeCheckpointSoon() }
            } catch {
                failLoading(error)
            }
        }
        state.withLock { $0.checkpoints.loadTask = task }
    }

    /// A queue this large, loaded without a checkpoint, gets one at once.
    static let checkpointAfterLoadThreshold = 1_000

    /// Waits until the scheduler is loaded (at once if it is).
    func waitUntilLoaded() async {
        guard loadsInBackground else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (loaded, pending) = state.withLock { state -> (Bool, PendingLoad?) in
                guard state.loading != nil else { return (true, nil) }
                state.loading!.waiters.append(continuation)
                return (false, state.loading!.takePending())
            }
            // A step of the open that needs the queue (a spool's entry with
            // an app key, say) begins the load itself.
            if let pending { load(pending) }
            if loaded { continuation.resume() }
        }
    }

    /// Admits `request` (eligible, its id fresh) if the store is still
    /// loading: its body is handed to storage numbered from
    /// ``StoreLoading/nextSequence``, and the entry joins the scheduler once
    /// it is loaded. Returns the acknowledgement and the entry, or `nil` (the
    /// load finished meanwhile: take the ordinary path, in this room).
    func admitWhileLoading(
        _ request: OutboxEnqueueRequest, prepared: PreparedBody, room: StoreRoom
    ) throws(OutboxError) -> (OutboxEntry, StoreAcknowledgement)? {
        try state.withLock { state throws(OutboxError) -> (OutboxEntry, StoreAcknowledgement)? in
            try check(state)
            // The number alone, not a copy of the loading state: a copy
            // alive at the append below shares its list of admitted
            // entries, which the append would then copy whole, every time.
            guard let nextSequence = state.loading?.nextSequence else { return nil }
            let metadata = EntryMetadata(
                id: request.id, sequence: nextSequence, status: .pending,
                priority: Int16(clamping: request.priority), attempts: 0,
                maxAttempts: UInt16(clamping: request.maxAttempts ?? configuration.defaultMaximumAttempts),
                scope: 0, type: 0, coalescing: 0, when: EntryMetadata.immediately,
                createdAt: request.createdAt.milliseconds, storedBytes: UInt32(clamping: prepared.storedBytes))
            let acknowledgement: StoreAcknowledgement
            do throws(OutboxError) {
                acknowledgement = try backend.submitNewBody(prepared, sequence: metadata.sequence, room: room)
            } catch {
                state.failure = error
                throw error
            }
            state.loading!.nextSequence += 1
            state.loading!.admitted.append(AdmittedEntry(metadata: metadata, scope: request.scope, type: request.type))
            state.newestEnqueue = acknowledgement
            state.checkpoints.bytesSince += prepared.storedBytes
            var body = prepared.body
            body.sequence = metadata.sequence
            let entry = body.entry(metadata: metadata, failure: nil, completion: nil, strings: StringInterner())
            return (entry, acknowledgement)
        }
    }

    /// Installs the loaded scheduler: the entries admitted meanwhile join
    /// it, the loading's changes (entries a crash left in flight, back to
    /// pending) are handed to storage, and every waiting call goes on.
    /// Then waits for those changes like ``persistLoadingChanges(_:)``.
    func completeLoad(_ loaded: Scheduler, changes: StoreChanges) async {
        let outcome = await installLoaded(loaded, changes: changes)
        switch outcome {
        case .failure(let error): fail(error)
        case .success(let acknowledgement?):
            do throws(OutboxError) { try await acknowledgement.wait(configuration.attemptDurability) } catch {
                fail(error)
            }
        case .success(nil): break
        }
    }

    private func installLoaded(_ loaded: Scheduler, changes: StoreChanges) async
        -> Result<StoreAcknowledgement?, OutboxError>
    {
        let room: StoreRoom
        do { room = try await backend.reserveRoom(bytes: Self.roomForStateRecords) } catch {
            failLoading(error)
            return .failure(error)
        }
        let (waiters, outcome) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Result<StoreAcknowledgement?, OutboxError>) in
            guard let loading = state.loading else { return ([], .success(nil)) }
            state.loading = nil
            var scheduler = loaded
            for admitted in loading.admitted {
                scheduler.admitLoaded(admitted.metadata, scope: admitted.scope, type: admitted.type)
            }
            state.scheduler = scheduler
            var outcome: Result<StoreAcknowledgement?, OutboxError> = .success(nil)
            if state.failure == nil, !changes.isEmpty {
                do throws(OutboxError) {
                    outcome = .success(try backend.submit(changes, newBodies: [], scheduler: state.scheduler, room: room))
                } catch {
                    state.failure = error
                    outcome = .failure(error)
                }
            }
            return (loading.waiters, outcome)
        }
        for waiter in waiters { waiter.resume() }
        return outcome
    }

    /// The load failed: every call refuses with `error` until a reopen.
    func failLoading(_ error: OutboxError) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.failure = state.failure ?? error
            guard let loading = state.loading else { return [] }
            state.loading = nil
            return loading.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

extension StoreCheckpoint {
    /// The first sequence number an open admits entries under before the
    /// load ends (``StoreCore/earlySequence(checkpoint:logNext:)``), for
    /// the fuzz target that holds it below every limit.
    package func earlySequence(logNext: UInt64) -> UInt64? { StoreCore.earlySequence(checkpoint: self, logNext: logNext) }
}
