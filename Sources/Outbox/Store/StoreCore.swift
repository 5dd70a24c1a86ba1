import Foundation
import OutboxLog
import Synchronization

/// The behaviour every store shares: the scheduler behind one lock, and the
/// rule that a change is handed to storage *under* that lock (so storage
/// sees changes in the order the scheduler made them) and awaited after it.
///
/// If storage ever fails after the scheduler changed, memory and disk may
/// disagree: the store then refuses every call (``OutboxError/Code/closed``)
/// until it is reopened, which rebuilds memory from disk.
final class StoreCore: Sendable {
    let partition: String
    let configuration: OutboxStoreConfiguration
    let backend: any StoreBackend

    private struct State {
        var scheduler: Scheduler
        var failure: OutboxError?
        var closed = false
    }

    private let state: Mutex<State>

    init(partition: String, configuration: OutboxStoreConfiguration, backend: any StoreBackend, scheduler: Scheduler) {
        self.partition = partition
        self.configuration = configuration
        self.backend = backend
        self.state = Mutex(State(scheduler: scheduler))
    }

    // MARK: Running changes

    /// Runs `change` on the scheduler; persists what it returns; waits for
    /// `durability`.
    private func perform<Result>(
        _ durability: Durability, newBody: PreparedBody? = nil,
        _ change: (inout Scheduler) throws(OutboxError) -> (Result, [StoreChange])
    ) async throws(OutboxError) -> Result {
        let (result, acknowledgement) = try state.withLock {
            state throws(OutboxError) -> (Result, StoreAcknowledgement?) in
            try check(state)
            let (result, changes) = try change(&state.scheduler)
            guard !changes.isEmpty else { return (result, nil) }
            do throws(OutboxError) {
                return (result, try backend.submit(changes, newBody: newBody, scheduler: state.scheduler))
            } catch {
                state.failure = error
                throw error
            }
        }
        if let acknowledgement {
            do throws(OutboxError) {
                try await acknowledgement.wait(durability)
            } catch {
                state.withLock { $0.failure = $0.failure ?? error }
                throw error
            }
        }
        return result
    }

    private func check(_ state: State) throws(OutboxError) {
        if state.closed { throw OutboxError(.closed, "the store is closed") }
        if let failure = state.failure {
            throw OutboxError(.closed, "storage failed earlier; reopen the store: \(failure)", storage: failure.storage)
        }
    }

    private func read<Result>(_ body: (inout Scheduler) -> Result) throws(OutboxError) -> Result {
        try state.withLock { state throws(OutboxError) -> Result in
            try check(state)
            return body(&state.scheduler)
        }
    }

    // MARK: Operations

    func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        let now = Date().milliseconds
        let idempotencyKey = UUID().uuidString
        // Encode (and seal) outside the lock; the sequence is filled in under it.
        var placeholder = EntryMetadata(
            id: request.id, sequence: 0, status: .pending, priority: Int16(clamping: request.priority),
            attempts: 0, maxAttempts: UInt16(clamping: request.maxAttempts ?? configuration.defaultMaximumAttempts),
            scope: 0, type: 0, coalescing: 0, when: now, createdAt: request.createdAt.milliseconds, storedBytes: 0)
        placeholder.dependencies = request.dependencies
        let prepared = try backend.prepare(
            EntryBody(request: request, metadata: placeholder, partition: partition, idempotencyKey: idempotencyKey))
        let (outcome, id) = try await perform(configuration.enqueueDurability, newBody: prepared) {
            scheduler throws(OutboxError) in
            let (outcome, changes) = try scheduler.enqueue(request, storedBytes: prepared.storedBytes, now: now)
            return ((outcome, request.id), changes)
        }
        switch outcome {
        case .duplicate(let status): return .duplicate(id, status: status)
        case .enqueued:
            guard let entry = try await entry(id) else { throw OutboxError(.notFound, "vanished after enqueue", entry: id) }
            return .enqueued(entry)
        case .coalesced(let replaced):
            guard let entry = try await entry(id) else { throw OutboxError(.notFound, "vanished after enqueue", entry: id) }
            return .coalesced(entry, replaced: replaced)
        }
    }

    func dueEntries(at now: Date, limit: Int) async throws(OutboxError) -> [OutboxEntry] {
        let ids = try read { $0.due(now: now.milliseconds, limit: max(0, limit)) }
        var result: [OutboxEntry] = []
        for id in ids { if let entry = try await entry(id) { result.append(entry) } }
        return result
    }

    func nextDueDate() async throws(OutboxError) -> Date? {
        try read { $0.nextDueTime().map(Date.init(milliseconds:)) }
    }

    func beginAttempt(_ id: OutboxEntryID, at now: Date, lease: Duration) async throws(OutboxError) -> OutboxEntry {
        let start = now.milliseconds
        try await perform(configuration.attemptDurability) { scheduler throws(OutboxError) in
            ((), try scheduler.beginAttempt(id, now: start, leaseUntil: start + lease.milliseconds))
        }
        guard let entry = try await entry(id) else { throw OutboxError(.notFound, "no such entry", entry: id) }
        return entry
    }

    func recordSuccess(_ id: OutboxEntryID, serverID: String?, at now: Date) async throws(OutboxError) {
        try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            ((), try scheduler.succeed(id, serverID: serverID, now: now.milliseconds))
        }
    }

    func recordFailure(
        _ id: OutboxEntryID, error: String, httpStatus: Int?, retryAt: Date
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            let (status, cascade, changes) = try scheduler.fail(
                id, error: error, httpStatus: httpStatus, retryAt: retryAt.milliseconds)
            return ((status, cascade), changes)
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
        try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            try scheduler.retry(id, now: now.milliseconds)
        }
    }

    func discard(_ id: OutboxEntryID) async throws(OutboxError) -> OutboxCascade {
        try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            try scheduler.discard(id)
        }
    }

    func entry(_ id: OutboxEntryID) async throws(OutboxError) -> OutboxEntry? {
        guard try read({ $0.metadata(id) }) != nil, let body = try await backend.body(of: id) else { return nil }
        // Read the state after the body: the freshest view of both.
        return try read { scheduler -> OutboxEntry? in
            guard let metadata = scheduler.metadata(id) else { return nil }
            return body.entry(
                metadata: metadata, failure: scheduler.failure(id), completion: scheduler.completion(id),
                strings: scheduler.strings)
        }
    }

    func entries(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry] {
        let ids = try read { $0.ids(matching: filter) }
        var result: [OutboxEntry] = []
        for id in ids { if let entry = try await entry(id) { result.append(entry) } }
        return result
    }

    func summary() throws(OutboxError) -> OutboxSummary { try read { $0.summary } }

    func dependents(of id: OutboxEntryID) throws(OutboxError) -> [OutboxEntryID] { try read { $0.dependents(of: id) } }

    func completion(of id: OutboxEntryID) throws(OutboxError) -> OutboxCompletion? {
        try read { scheduler in
            scheduler.completion(id).map {
                OutboxCompletion(serverID: $0.serverID, syncedAt: Date(milliseconds: $0.syncedAt))
            }
        }
    }

    func clear() async throws(OutboxError) {
        try await perform(configuration.outcomeDurability) { scheduler in ((), scheduler.clear()) }
    }

    func prune(at now: Date) async throws(OutboxError) {
        try await perform(configuration.outcomeDurability) { scheduler in ((), scheduler.prune(now: now.milliseconds)) }
    }

    /// Persists changes made while loading (crash-left leases reset).
    func persistLoadingChanges(_ changes: [StoreChange]) async throws(OutboxError) {
        guard !changes.isEmpty else { return }
        try await perform(configuration.attemptDurability) { _ in ((), changes) }
    }

    func close() async throws(OutboxError) {
        let alreadyClosed = state.withLock { state -> Bool in
            defer { state.closed = true }
            return state.closed
        }
        if !alreadyClosed { try await backend.close() }
    }

    /// Memory the scheduler holds per entry, for benchmarks.
    var entryCount: Int { state.withLock { $0.scheduler.entries.count } }
}
