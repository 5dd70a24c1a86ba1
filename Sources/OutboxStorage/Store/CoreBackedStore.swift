import Foundation
import OutboxModel

/// A store whose `OutboxStore` methods are its `StoreCore`'s: both
/// `LogOutboxStore` and `InMemoryOutboxStore`. They differ only in the
/// backend the core writes to and in what a store does before a claim, so
/// the protocol's methods are written once, here, instead of forwarded one
/// by one in each store.
///
/// Internal: an app sees the methods through `OutboxStore`, whose
/// documentation they carry. A conforming store declares `core` and, if it
/// must do something before each claim, `prepareToClaim()`.
protocol CoreBackedStore: OutboxStore {
    var core: StoreCore { get }

    /// Runs before each `claimDue(at:limit:lease:accepting:)`: a
    /// `LogOutboxStore` moves in what other processes spooled since a
    /// writer poked it.
    func prepareToClaim() async throws(OutboxError)
}

extension CoreBackedStore {
    func prepareToClaim() async throws(OutboxError) {}

    public var partition: String { core.partition }

    public func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        try await core.enqueue(request)
    }
    public func enqueue(_ requests: [OutboxEnqueueRequest]) async throws(OutboxError) -> [OutboxEnqueueResult] {
        try await core.enqueue(requests)
    }
    public func dueEntries(at now: Date, limit: Int) async throws(OutboxError) -> [OutboxEntry] {
        try await core.dueEntries(at: now, limit: limit)
    }
    public func claimDue(
        at now: Date, limit: Int, lease: Duration, accepting: (String) -> Bool
    ) async throws(OutboxError) -> OutboxClaim {
        try await prepareToClaim()
        return try await core.claimDue(at: now, limit: limit, lease: lease, accepting: accepting)
    }
    public func nextDueDate() async throws(OutboxError) -> Date? { try await core.nextDueDate() }
    public func beginAttempt(_ id: OutboxEntry.ID, at now: Date, lease: Duration) async throws(OutboxError) -> OutboxEntry {
        try await core.beginAttempt(id, at: now, lease: lease)
    }
    public func recordSuccess(_ id: OutboxEntry.ID, serverID: String?, at now: Date) async throws(OutboxError) {
        try await core.recordSuccess(id, serverID: serverID, at: now)
    }
    public func recordSuccesses(_ successes: [OutboxSuccess], at now: Date) async throws(OutboxError)
        -> [OutboxEntry.ID: OutboxError]
    {
        try await core.recordSuccesses(successes, at: now)
    }
    public func recordFailure(
        _ id: OutboxEntry.ID, _ failure: OutboxFailure, retryAt: Date, countsAsAttempt: Bool, serverAnsweredAt: Date?,
        outcomeUnknownAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await core.recordFailure(
            id, failure, retryAt: retryAt, countsAsAttempt: countsAsAttempt, serverAnsweredAt: serverAnsweredAt,
            outcomeUnknownAt: outcomeUnknownAt)
    }
    public func reclaimExpiredLeases(at now: Date) async throws(OutboxError) -> [OutboxEntry.ID] {
        try await core.reclaimExpiredLeases(at: now)
    }
    public func quarantine(_ id: OutboxEntry.ID, _ failure: OutboxFailure) async throws(OutboxError) -> OutboxCascade {
        try await core.quarantine(id, failure)
    }
    public func markConflict(_ id: OutboxEntry.ID, _ failure: OutboxFailure) async throws(OutboxError) {
        try await core.markConflict(id, failure)
    }
    public func retry(_ id: OutboxEntry.ID, at now: Date) async throws(OutboxError) -> OutboxCascade {
        try await core.retry(id, at: now)
    }
    public func discard(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCascade { try await core.discard(id) }
    public func entry(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntry? { try await core.entry(id) }
    public func entries(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry] {
        try await core.entries(matching: filter)
    }
    public func summary() async throws(OutboxError) -> OutboxSummary { try await core.summary() }
    public func dependents(of id: OutboxEntry.ID) async throws(OutboxError) -> [OutboxEntry.ID] {
        try await core.dependents(of: id)
    }
    public func completion(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCompletion? {
        try await core.completion(of: id)
    }
    public func clear() async throws(OutboxError) { try await core.clear() }
    public func prune(at now: Date) async throws(OutboxError) { try await core.prune(at: now) }
    public func close() async throws(OutboxError) { try await core.close() }

    // Controls (OutboxStore+Controls) and observation (OutboxStore+Observation).

    public func bringForward(_ ids: [OutboxEntry.ID]?, at now: Date) async throws(OutboxError) -> [OutboxEntry.ID] {
        try await core.bringForward(ids, at: now)
    }
    public func removeQuarantined(before cutoff: Date) async throws(OutboxError) -> [OutboxEntry.ID] {
        try await core.removeQuarantined(before: cutoff)
    }
    // Waits for a store opened before its queue was loaded (a no-op for
    // one that has it all).
    public func state(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntryState? {
        await core.waitUntilLoaded()
        return try core.state(of: id)
    }
    public func ids(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry.ID] {
        await core.waitUntilLoaded()
        return try core.ids(matching: filter)
    }
    public func explain(_ id: OutboxEntry.ID, at now: Date) async throws(OutboxError) -> OutboxExplanation {
        await core.waitUntilLoaded()
        return try core.explain(id, at: now)
    }
    public var changeFeed: OutboxChangeFeed? { core.feed }
}
