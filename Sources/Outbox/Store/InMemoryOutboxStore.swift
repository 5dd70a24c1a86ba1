import Foundation
import OutboxLocking

/// An ``OutboxStore`` that keeps everything in memory: for unit tests of app
/// code that enqueues or drains. It behaves exactly like ``LogOutboxStore``
/// (the same scheduler and the same conformance suite) but nothing survives
/// the process.
public final class InMemoryOutboxStore: OutboxStore {
    let core: StoreCore

    public var partition: String { core.partition }

    public init(partition: String = "default", configuration: OutboxStoreConfiguration = OutboxStoreConfiguration()) {
        core = StoreCore(
            partition: partition, configuration: configuration, backend: MemoryBackend(),
            scheduler: Scheduler(partition: partition, configuration: configuration))
    }

    public func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        try await core.enqueue(request)
    }
    public func dueEntries(at now: Date, limit: Int) async throws(OutboxError) -> [OutboxEntry] {
        try await core.dueEntries(at: now, limit: limit)
    }
    public func claimDue(
        at now: Date, limit: Int, lease: Duration, accepting: (String) -> Bool
    ) async throws(OutboxError) -> OutboxClaim {
        try await core.claimDue(at: now, limit: limit, lease: lease, accepting: accepting)
    }
    public func nextDueDate() async throws(OutboxError) -> Date? { try await core.nextDueDate() }
    public func beginAttempt(_ id: OutboxEntry.ID, at now: Date, lease: Duration) async throws(OutboxError) -> OutboxEntry {
        try await core.beginAttempt(id, at: now, lease: lease)
    }
    public func recordSuccess(_ id: OutboxEntry.ID, serverID: String?, at now: Date) async throws(OutboxError) {
        try await core.recordSuccess(id, serverID: serverID, at: now)
    }
    public func recordFailure(
        _ id: OutboxEntry.ID, error: String, httpStatus: Int?, retryAt: Date
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await core.recordFailure(id, error: error, httpStatus: httpStatus, retryAt: retryAt)
    }
    public func recordFailure(
        _ id: OutboxEntry.ID, error: String, httpStatus: Int?, retryAt: Date, countsAsAttempt: Bool,
        serverAnsweredAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await core.recordFailure(
            id, error: error, httpStatus: httpStatus, retryAt: retryAt, countsAsAttempt: countsAsAttempt,
            serverAnsweredAt: serverAnsweredAt)
    }
    public func recordFailure(
        _ id: OutboxEntry.ID, error: String, httpStatus: Int?, retryAt: Date, countsAsAttempt: Bool,
        serverAnsweredAt: Date?, outcomeUnknownAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await core.recordFailure(
            id, error: error, httpStatus: httpStatus, retryAt: retryAt, countsAsAttempt: countsAsAttempt,
            serverAnsweredAt: serverAnsweredAt, outcomeUnknownAt: outcomeUnknownAt)
    }
    public func reclaimExpiredLeases(at now: Date) async throws(OutboxError) -> [OutboxEntry.ID] {
        try await core.reclaimExpiredLeases(at: now)
    }
    public func quarantine(_ id: OutboxEntry.ID, reason: String, httpStatus: Int?) async throws(OutboxError) -> OutboxCascade {
        try await core.quarantine(id, reason: reason, httpStatus: httpStatus)
    }
    public func markConflict(_ id: OutboxEntry.ID, reason: String, httpStatus: Int?) async throws(OutboxError) {
        try await core.markConflict(id, reason: reason, httpStatus: httpStatus)
    }
    public func retry(_ id: OutboxEntry.ID, at now: Date) async throws(OutboxError) -> OutboxCascade {
        try await core.retry(id, at: now)
    }
    public func discard(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCascade { try await core.discard(id) }
    public func entry(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntry? { try await core.entry(id) }
    public func entries(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry] {
        try await core.entries(matching: filter)
    }
    public func summary() async throws(OutboxError) -> OutboxSummary { try core.summary() }
    public func dependents(of id: OutboxEntry.ID) async throws(OutboxError) -> [OutboxEntry.ID] {
        try core.dependents(of: id)
    }
    public func completion(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCompletion? {
        try core.completion(of: id)
    }
    public func clear() async throws(OutboxError) { try await core.clear() }
    public func prune(at now: Date) async throws(OutboxError) { try await core.prune(at: now) }
    public func close() async throws(OutboxError) { try await core.close() }
}

/// Bodies in a dictionary.
private final class MemoryBackend: StoreBackend {
    private let bodies = Locked<[OutboxEntryID: EntryBody]>([:])

    func prepare(_ body: EntryBody) throws(OutboxError) -> PreparedBody {
        PreparedBody(body: body, encoded: nil, storedBytes: try EntryCodec.encode(body, sealer: nil).count)
    }

    func reserveRoom(bytes: Int) async throws(OutboxError) -> StoreRoom { .unbounded }

    func submit(
        _ changes: [StoreChange], newBodies: [PreparedBody], scheduler: Scheduler, room: StoreRoom
    ) throws(OutboxError) -> StoreAcknowledgement {
        bodies.withLock { bodies in
            for change in changes {
                switch change {
                case .newEntry(let id):
                    guard var body = newBodies.first(where: { $0.body.id == id })?.body, let metadata = scheduler.metadata(id) else { continue }
                    body.sequence = metadata.sequence
                    bodies[id] = body
                case .remove(let id): bodies[id] = nil
                case .state, .completion, .removeCompletion: break  // the scheduler holds them
                }
            }
        }
        return .immediate
    }

    func bodies(of ids: [OutboxEntryID]) async throws(OutboxError) -> [EntryBody?] {
        bodies.withLock { bodies in ids.map { bodies[$0] } }
    }

    func close() async throws(OutboxError) {}
}
