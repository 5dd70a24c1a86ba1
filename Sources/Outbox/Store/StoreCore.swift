import Foundation
import OutboxLog
import OutboxLocking

/// The behaviour every store shares: the scheduler behind one lock, and the
/// rule that a change is handed to storage *under* that lock (so storage
/// sees changes in the order the scheduler made them) and awaited after it.
///
/// If storage ever fails after the scheduler changed, memory and disk may
/// disagree: the store then refuses every call (``OutboxError/Code/closed``)
/// until it is reopened, which rebuilds memory from disk. Bad input never
/// gets that far: ``Admission`` refuses it first.
///
/// Nothing is handed out for sending (``claimDue(at:limit:lease:accepting:)``,
/// ``beginAttempt(_:at:lease:)``) before the entry's own enqueue has reached
/// `enqueueDurability`: the server must never apply a write whose enqueue
/// may still fail, or be undone by a power loss.
final class StoreCore: Sendable {
    let partition: String
    let configuration: OutboxStoreConfiguration
    let backend: any StoreBackend
    /// Announces the entries each change touched, once it is acknowledged.
    let feed = OutboxChangeFeed()

    struct State {
        var scheduler: Scheduler
        var failure: OutboxError?
        var closed = false
        /// Entries whose enqueue was handed to storage but has not yet been
        /// acknowledged at `enqueueDurability`, with that acknowledgement.
        var unconfirmed: [OutboxEntryID: StoreAcknowledgement] = [:]
        /// Set until a load in the background has installed the scheduler
        /// (`StoreCore+Loading.swift`).
        var loading: StoreLoading?
        /// Checkpoints (`StoreCore+Checkpoint.swift`).
        var checkpoints = StoreCheckpointing()
        /// How the scheduler was loaded (for tests and diagnostics).
        var loadedFrom: LoadSource = .everyEntry
    }

    let state: Locked<State>

    enum LoadSource: Sendable, Hashable {
        /// Every entry's body and state, read from the log.
        case everyEntry
        /// The store checkpoint and the entries changed after it.
        case checkpoint
    }

    /// How the scheduler was loaded (after the load: ``waitUntilLoaded()``).
    var loadedFrom: LoadSource { state.withLock { $0.loadedFrom } }
    /// Why the configuration cannot be used, if it cannot: every call
    /// refuses with it (a store built without a throwing initializer).
    let configurationError: OutboxError?
    /// Whether the scheduler was loaded in the background (calls then wait
    /// for it: ``waitUntilLoaded()``).
    let loadsInBackground: Bool
    /// Where the store checkpoint goes, if the store keeps one.
    let checkpointFile: CheckpointFile?

    init(
        partition: String, configuration: OutboxStoreConfiguration, backend: any StoreBackend, scheduler: Scheduler,
        loading: StoreLoading? = nil, checkpointFile: CheckpointFile? = nil
    ) {
        self.partition = partition
        self.configuration = configuration
        self.backend = backend
        self.loadsInBackground = loading != nil
        self.checkpointFile = checkpointFile
        var initial = State(scheduler: scheduler)
        initial.loading = loading
        self.state = Locked(initial)
        do { try Admission.check(configuration) } catch { configurationError = error; return }
        configurationError = nil
    }

    /// Durability a claim of these entries waits for: the attempt's, or the
    /// enqueue's if one of them may not have reached it yet.
    private func durability(forSending ids: some Sequence<OutboxEntryID>, _ state: State) -> Durability {
        guard ids.contains(where: { state.unconfirmed[$0] != nil }) else { return configuration.attemptDurability }
        return Self.stronger(configuration.attemptDurability, configuration.enqueueDurability)
    }

    static func stronger(_ a: Durability, _ b: Durability) -> Durability {
        let order: [Durability] = [.buffered, .written, .durable]
        return order.firstIndex(of: a)! >= order.firstIndex(of: b)! ? a : b
    }

    // MARK: Running changes

    /// Runs `change` on the scheduler; persists what it returns; waits for
    /// `durability`.
    func perform<Result>(
        _ durability: Durability, newBody: PreparedBody? = nil,
        _ change: (inout Scheduler) throws(OutboxError) -> (Result, [StoreChange])
    ) async throws(OutboxError) -> Result {
        let bodies = newBody.map { [$0] } ?? []
        var room = try roomNow(for: bodies)
        if room == nil { room = try await reserveRoom(for: bodies) }
        let (result, acknowledgement) = try submit(newBodies: bodies, room: room!, change)
        if try !reachedWithoutWaiting(acknowledgement, durability) { try await wait(for: acknowledgement, durability) }
        return result
    }

    /// The first half of ``perform(_:newBody:_:)``: runs `change` and hands
    /// its changes to storage, under the lock, without waiting. Still under
    /// the lock, `whileLocked` then sees the result and the acknowledgement
    /// if changes were handed over, and `unchanged` the result if there were
    /// none.
    func submit<Result>(
        newBodies: [PreparedBody] = [], room: StoreRoom, _ change: (inout Scheduler) throws(OutboxError) -> (Result, [StoreChange]),
        whileLocked: (inout State, Result, StoreAcknowledgement) -> Void = { _, _, _ in },
        unchanged: (inout State, Result) -> Void = { _, _ in }
    ) throws(OutboxError) -> (Result, StoreAcknowledgement?) {
        var checkpointDue = false
        defer { if checkpointDue { startCheckpoint() } }
        return try state.withLock { state throws(OutboxError) -> (Result, StoreAcknowledgement?) in
            try check(state)
            try checkLoaded(state)
            let (result, changes) = try change(&state.scheduler)
            guard !changes.isEmpty else {
                unchanged(&state, result)
                return (result, nil)
            }
            let acknowledgement: StoreAcknowledgement
            do throws(OutboxError) {
                acknowledgement = try backend.submit(changes, newBodies: newBodies, scheduler: state.scheduler, room: room)
            } catch {
                state.failure = error
                throw error
            }
            let observed = acknowledgement.announcing(changes, to: feed)
            whileLocked(&state, result, observed)
            let bodies = newBodies.reduce(0) { $0 + $1.storedBytes }
            checkpointDue = noteWritten(bytes: bodies + 64 * changes.count, in: &state)
            return (result, observed)
        }
    }

    /// Before ``submit(newBodies:room:_:whileLocked:unchanged:)``, outside the
    /// lock: waits for room in storage for a change (the new body and a few
    /// state records), so storage never refuses a change already made in
    /// memory because too much waits to be written.
    func reserveRoom(for newBodies: [PreparedBody] = []) async throws(OutboxError) -> StoreRoom {
        await waitUntilLoaded()
        if let room = try roomNow(for: newBodies) { return room }
        return try await backend.reserveRoom(bytes: Self.roomBytes(for: newBodies))
    }

    /// ``reserveRoom(for:)`` when the room is there now — the common case —
    /// without an `await` (callers call this first: no async frame, no
    /// suspension); `nil` if it must be waited for, or while the store is
    /// still loading (``reserveRoom(for:)`` waits for the load first).
    func roomNow(for newBodies: [PreparedBody] = []) throws(OutboxError) -> StoreRoom? {
        let loaded = try state.withLock { state throws(OutboxError) -> Bool in
            try check(state)
            return state.loading == nil
        }
        guard loaded else { return nil }
        return backend.reserveRoomNow(bytes: Self.roomBytes(for: newBodies))
    }

    private static func roomBytes(for newBodies: [PreparedBody]) -> Int {
        newBodies.reduce(0) { $0 + ($1.encoded?.count ?? 0) } + roomForStateRecords
    }

    /// Room reserved for the state records of one change besides a new
    /// body: a handful of ~100-byte records. A change that writes more (a
    /// large claim, `clear`) is still admitted, past the bound by the rest.
    static let roomForStateRecords = 4096

    /// The second half of ``perform(_:newBody:_:)``: waits for submitted
    /// changes to reach `durability`.
    func wait(for acknowledgement: StoreAcknowledgement?, _ durability: Durability) async throws(OutboxError) {
        guard let acknowledgement else { return }
        do throws(OutboxError) {
            try await acknowledgement.wait(durability)
        } catch {
            fail(error)
            throw error
        }
    }

    /// ``wait(for:_:)`` when no waiting is needed (see
    /// ``StoreAcknowledgement/reachedWithoutWaiting(_:)``); `false` if it is.
    private func reachedWithoutWaiting(
        _ acknowledgement: StoreAcknowledgement?, _ durability: Durability
    ) throws(OutboxError) -> Bool {
        guard let acknowledgement else { return true }
        do throws(OutboxError) {
            return try acknowledgement.reachedWithoutWaiting(durability)
        } catch {
            fail(error)
            throw error
        }
    }

    /// Memory and storage may disagree from here on: refuse every call until
    /// a reopen rebuilds memory from disk.
    func fail(_ error: OutboxError) {
        state.withLock { $0.failure = $0.failure ?? error }
    }

    func check(_ state: State) throws(OutboxError) {
        if let configurationError { throw configurationError }
        if state.closed { throw OutboxError(.closed, "the store is closed") }
        if let failure = state.failure {
            throw OutboxError(.closed, "storage failed earlier; reopen the store: \(failure)", storage: failure.storage)
        }
    }

    /// Runs `body` on the loaded scheduler. Call ``waitUntilLoaded()`` first.
    func read<Result>(_ body: (inout Scheduler) -> Result) throws(OutboxError) -> Result {
        try state.withLock { state throws(OutboxError) -> Result in
            try check(state)
            try checkLoaded(state)
            return body(&state.scheduler)
        }
    }

    /// Every path to the scheduler waits for the load first: reaching it
    /// before would read an empty queue.
    private func checkLoaded(_ state: State) throws(OutboxError) {
        if state.loading != nil {
            throw OutboxError(.invalidArgument, "internal error: the store was used before it finished loading")
        }
    }

    // MARK: Operations

    func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        if let configurationError { throw configurationError }
        let now = Date().milliseconds
        try Admission.check(request)
        try Admission.payloadSize(request, configuration: configuration)
        guard Admission.goesToFile(request.payload.count, configuration) else {
            return try await enqueue(request, prepared: try prepareBody(request, now: now), now: now)
        }
        // The payload's file is written and synced before the entry that
        // references it is handed to the log (Docs/DURABILITY.md, "Payload files").
        let prepared = try await prepareBodyStoringPayload(request, now: now)
        let result: OutboxEnqueueResult
        do throws(OutboxError) { result = try await enqueue(request, prepared: prepared, now: now) } catch {
            await discardFiles(of: [prepared], after: error)
            throw error
        }
        if case .duplicate = result { await discardUnrecordedFiles(of: [prepared]) }
        return result
    }

    /// An enqueue whose body is prepared (its payload file, if any, written).
    private func enqueue(
        _ request: OutboxEnqueueRequest, prepared: PreparedBody, now: Int64
    ) async throws(OutboxError) -> OutboxEnqueueResult {
        // Every enqueue uses up the id's freshness, admitted early or not.
        let fresh = FreshEntryIDs.take(request.id)
        var reserved: StoreRoom?
        if loadsInBackground, fresh, admitsWhileLoading(request), state.withLock({ $0.loading != nil }) {
            let room = try await backend.reserveRoom(bytes: (prepared.encoded?.count ?? 0) + Self.roomForStateRecords)
            if let (entry, acknowledgement) = try admitWhileLoading(request, prepared: prepared, room: room) {
                try await wait(for: acknowledgement, configuration.enqueueDurability)
                state.withLock { _ = $0.unconfirmed.removeValue(forKey: request.id) }
                return .enqueued(entry)
            }
            reserved = room  // loaded meanwhile: the ordinary path, in the room reserved
        }
        // The new entry is built from the body in hand: reading it back would
        // wait for the write and cost a read per enqueue.
        var original: StoreAcknowledgement?
        let bodies = [prepared]
        var room = reserved
        if room == nil { room = try roomNow(for: bodies) }
        if room == nil { room = try await reserveRoom(for: bodies) }
        let ((outcome, entry), acknowledgement) = try submit(newBodies: bodies, room: room!) { scheduler throws(OutboxError) in
            let (outcome, changes) = try scheduler.enqueue(request, storedBytes: prepared.storedBytes, now: now)
            var entry: OutboxEntry?
            if let metadata = scheduler.metadata(request.id), !changes.isEmpty {
                var body = prepared.body
                body.sequence = metadata.sequence
                entry = body.entry(
                    metadata: metadata, failure: scheduler.failure(request.id), completion: nil, strings: scheduler.strings)
            }
            return ((outcome, entry), changes)
        } whileLocked: { state, result, acknowledgement in
            // Until it is acknowledged, a claim of it waits for the enqueue's durability.
            if result.1 != nil { state.unconfirmed[request.id] = acknowledgement }
        } unchanged: { state, result in
            // A duplicate of an enqueue still in progress answers once that one has.
            if case .duplicate(let id, _) = result.0 { original = state.unconfirmed[id] }
        }
        if try !reachedWithoutWaiting(acknowledgement ?? original, configuration.enqueueDurability) {
            try await wait(for: acknowledgement ?? original, configuration.enqueueDurability)
        }
        if entry != nil { state.withLock { _ = $0.unconfirmed.removeValue(forKey: request.id) } }
        switch (outcome, entry) {
        case (.duplicate(let id, let status), _): return .duplicate(id, status: status)
        case (.enqueued, let entry?): return .enqueued(entry)
        case (.coalesced(let replaced), let entry?): return .coalesced(entry, replaced: replaced)
        case (.enqueued, nil), (.coalesced, nil):
            throw OutboxError(.notFound, "vanished during enqueue", entry: request.id)
        }
    }

    /// The new entry's body, encoded (and sealed) outside the lock; its
    /// sequence is filled in under it. Checks that its record fits the log.
    func prepareBody(
        _ request: OutboxEnqueueRequest, now: Int64, payloadFile: PayloadFileReference? = nil
    ) throws(OutboxError) -> PreparedBody {
        try Self.prepareBody(
            request, partition: partition, configuration: configuration, now: now, payloadFile: payloadFile,
            prepare: backend.prepare)
    }

    func claimDue(
        at now: Date, limit: Int, lease: Duration, accepting: (String) -> Bool
    ) async throws(OutboxError) -> OutboxClaim {
        let start = try Admission.milliseconds(now, "now")
        let leaseUntil = start + (try Admission.milliseconds(lease, "the lease"))
        var durability = configuration.attemptDurability
        var room = try roomNow()
        if room == nil { room = try await reserveRoom() }
        let ((claimed, unaccepted), acknowledgement) = try submit(room: room!) { scheduler in
            let result = scheduler.claim(now: start, limit: max(0, limit), leaseUntil: leaseUntil, accepts: accepting)
            return ((result.claimed, result.unaccepted), result.changes)
        } whileLocked: { state, result, _ in
            durability = self.durability(forSending: result.0, state)
        }
        // Read the bodies while the attempt marks are being written.
        var entries: [OutboxEntry] = []
        entries.reserveCapacity(claimed.count)
        do throws(OutboxError) {
            for (id, entry) in zip(claimed, try await self.entries(claimed)) {
                guard let entry else { throw OutboxError(.notFound, "a claimed entry has no body", entry: id) }
                entries.append(entry)
            }
        } catch {
            // The claimed entries are in flight and cannot be handed out:
            // only a reopen (which resets leases) puts them back.
            fail(error)
            throw error
        }
        // The attempt marks are written after the claimed entries' bodies:
        // once they reach the durability the enqueues promised, so have those.
        if try !reachedWithoutWaiting(acknowledgement, durability) { try await wait(for: acknowledgement, durability) }
        return OutboxClaim(entries: entries, unaccepted: Dictionary(unaccepted, uniquingKeysWith: { first, _ in first }))
    }

    func dueEntries(at now: Date, limit: Int) async throws(OutboxError) -> [OutboxEntry] {
        let start = try Admission.milliseconds(now, "now")
        await waitUntilLoaded()
        let ids = try read { $0.due(now: start, limit: max(0, limit)) }
        return try await entries(ids).compactMap { $0 }
    }

    func nextDueDate() async throws(OutboxError) -> Date? {
        await waitUntilLoaded()
        return try read { $0.nextDueTime().map(Date.init(milliseconds:)) }
    }

    func beginAttempt(_ id: OutboxEntryID, at now: Date, lease: Duration) async throws(OutboxError) -> OutboxEntry {
        let start = try Admission.milliseconds(now, "now")
        let leaseUntil = start + (try Admission.milliseconds(lease, "the lease"))
        var durability = configuration.attemptDurability
        var room = try roomNow()
        if room == nil { room = try await reserveRoom() }
        let (_, acknowledgement) = try submit(room: room!) { scheduler throws(OutboxError) in
            ((), try scheduler.beginAttempt(id, now: start, leaseUntil: leaseUntil))
        } whileLocked: { state, _, _ in
            durability = self.durability(forSending: CollectionOfOne(id), state)
        }
        if try !reachedWithoutWaiting(acknowledgement, durability) { try await wait(for: acknowledgement, durability) }
        guard let entry = try await entry(id) else { throw OutboxError(.notFound, "no such entry", entry: id) }
        return entry
    }

    func recordSuccess(_ id: OutboxEntryID, serverID: String?, at now: Date) async throws(OutboxError) {
        let time = try Admission.milliseconds(now, "now", entry: id)
        try Admission.serverID(serverID, entry: id)
        try await perform(configuration.successDurability) { scheduler throws(OutboxError) in
            ((), try scheduler.succeed(id, serverID: serverID, now: time))
        }
    }

    func recordSuccesses(_ successes: [OutboxSuccess], at now: Date) async throws(OutboxError) -> [OutboxEntryID: OutboxError] {
        let time = try Admission.milliseconds(now, "now")
        var refused: [OutboxEntryID: OutboxError] = [:]
        var admitted: [OutboxSuccess] = []
        admitted.reserveCapacity(successes.count)
        for success in successes {
            do throws(OutboxError) {
                try Admission.serverID(success.serverID, entry: success.id)
                admitted.append(success)
            } catch {
                refused[success.id] = error
            }
        }
        guard !admitted.isEmpty else { return refused }
        // One batch of log records for all of them, one wait.
        return try await perform(configuration.successDurability) { scheduler throws(OutboxError) in
            var changes: [StoreChange] = []
            changes.reserveCapacity(admitted.count * 3)
            for success in admitted {
                do throws(OutboxError) {
                    changes += try scheduler.succeed(success.id, serverID: success.serverID, now: time)
                } catch {
                    refused[success.id] = error
                }
            }
            return (refused, changes)
        }
    }

    func recordFailure(
        _ id: OutboxEntryID, error: String, httpStatus: Int?, retryAt: Date, countsAsAttempt: Bool = true,
        serverAnsweredAt: Date? = nil, outcomeUnknownAt: Date? = nil
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        let retryTime = try Admission.milliseconds(retryAt, "retryAt", entry: id)
        let answeredTime = try serverAnsweredAt.map { date throws(OutboxError) in try Admission.milliseconds(date, "serverAnsweredAt", entry: id) }
        let unknownTime = try outcomeUnknownAt.map { date throws(OutboxError) in try Admission.milliseconds(date, "outcomeUnknownAt", entry: id) }
        return try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            let (status, cascade, changes) = try scheduler.fail(
                id, error: error, httpStatus: httpStatus, retryAt: retryTime, counted: countsAsAttempt,
                answeredAt: answeredTime, outcomeUnknownAt: unknownTime)
            return ((status, cascade), changes)
        }
    }

    func reclaimExpiredLeases(at now: Date) async throws(OutboxError) -> [OutboxEntryID] {
        try await perform(configuration.attemptDurability) { scheduler in
            let reclaimed = scheduler.reclaimExpiredLeases(now: now.milliseconds)
            return (reclaimed, reclaimed.map { .state($0) })
        }
    }

    func quarantine(_ id: OutboxEntryID, reason: String, httpStatus: Int?) async throws(OutboxError) -> OutboxCascade {
        try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            try scheduler.quarantine(id, reason: reason, httpStatus: httpStatus)
        }
    }

    func markConflict(_ id: OutboxEntryID, reason: String, httpStatus: Int?) async throws(OutboxError) {
        try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            ((), try scheduler.conflict(id, reason: reason, httpStatus: httpStatus))
        }
    }

    func retry(_ id: OutboxEntryID, at now: Date) async throws(OutboxError) -> OutboxCascade {
        let time = try Admission.milliseconds(now, "now", entry: id)
        return try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            try scheduler.retry(id, now: time)
        }
    }

    func discard(_ id: OutboxEntryID) async throws(OutboxError) -> OutboxCascade {
        try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            try scheduler.discard(id)
        }
    }

    func entry(_ id: OutboxEntryID) async throws(OutboxError) -> OutboxEntry? {
        try await entries([id])[0]
    }

    /// The entries with these ids (`nil` for one that is gone), bodies read
    /// in one batch.
    func entries(_ ids: [OutboxEntryID]) async throws(OutboxError) -> [OutboxEntry?] {
        await waitUntilLoaded()
        let live = try read { scheduler in ids.filter { scheduler.metadata($0) != nil } }
        guard !live.isEmpty else { return Array(repeating: nil, count: ids.count) }
        let bodies = Dictionary(
            zip(live, try await backend.bodies(of: live)).compactMap { id, body in body.map { (id, $0) } },
            uniquingKeysWith: { first, _ in first })
        // Read the state after the bodies: the freshest view of both.
        return try read { scheduler in
            ids.map { id -> OutboxEntry? in
                guard let body = bodies[id], let metadata = scheduler.metadata(id) else { return nil }
                return body.entry(
                    metadata: metadata, failure: scheduler.failure(id), completion: scheduler.completion(id),
                    strings: scheduler.strings)
            }
        }
    }

    func entries(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry] {
        await waitUntilLoaded()
        let ids = try read { $0.ids(matching: filter) }
        var result: [OutboxEntry] = []
        result.reserveCapacity(ids.count)
        // In pages: one read job per 512 entries, however long the queue.
        for start in stride(from: 0, to: ids.count, by: 512) {
            result += try await entries(Array(ids[start..<min(start + 512, ids.count)])).compactMap { $0 }
        }
        return result
    }

    func summary() async throws(OutboxError) -> OutboxSummary {
        await waitUntilLoaded()
        return try fullSummary()
    }

    func dependents(of id: OutboxEntryID) async throws(OutboxError) -> [OutboxEntryID] {
        await waitUntilLoaded()
        return try read { $0.dependents(of: id) }
    }

    func completion(of id: OutboxEntryID) async throws(OutboxError) -> OutboxCompletion? {
        await waitUntilLoaded()
        return try read { scheduler in
            scheduler.completion(id).map {
                OutboxCompletion(serverID: $0.serverID, syncedAt: Date(milliseconds: $0.syncedAt))
            }
        }
    }

    func clear() async throws(OutboxError) {
        try await perform(configuration.outcomeDurability) { scheduler in ((), scheduler.clear()) }
    }

    func prune(at now: Date) async throws(OutboxError) {
        let time = try Admission.milliseconds(now, "now")
        try await perform(configuration.outcomeDurability) { scheduler in ((), scheduler.prune(now: time)) }
    }

    /// Persists changes made while loading (crash-left leases reset).
    func persistLoadingChanges(_ changes: [StoreChange]) async throws(OutboxError) {
        guard !changes.isEmpty else { return }
        try await perform(configuration.attemptDurability) { _ in ((), changes) }
    }

    func close() async throws(OutboxError) {
        // A clean close leaves a checkpoint: the next open reads it instead
        // of every entry (not while loading, nor once storage failed).
        if checkpointFile != nil, state.withLock({ !$0.closed && $0.loading == nil && $0.failure == nil }) {
            await writeCheckpoint(waitingForRunning: true)
        }
        let alreadyClosed = state.withLock { state -> Bool in
            defer { state.closed = true }
            return state.closed
        }
        if !alreadyClosed {
            try await backend.close()
            await stopLoading()
        }
    }

    /// Memory the scheduler holds per entry, for benchmarks.
    var entryCount: Int { state.withLock { $0.scheduler.entries.count } }
}
