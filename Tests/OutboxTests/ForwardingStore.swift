import Foundation
import Outbox

/// A test store that wraps another: its extension forwards to `wrapped`
/// every `OutboxStore` requirement without a default implementation. A
/// conforming type writes the ones it intercepts, and any requirement with
/// a default it wants forwarded too; one it leaves out runs the protocol's
/// default (over the forwarded calls).
protocol ForwardingOutboxStore: OutboxStore {
    var wrapped: any OutboxStore { get }
}

extension ForwardingOutboxStore {
    var partition: String { wrapped.partition }
    func publishSnapshot(_ snapshot: OutboxQueueSnapshot) async throws(OutboxError) {
        try await wrapped.publishSnapshot(snapshot)
    }
    func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        try await wrapped.enqueue(request)
    }
    func dueEntries(at now: Date, limit: Int) async throws(OutboxError) -> [OutboxEntry] {
        try await wrapped.dueEntries(at: now, limit: limit)
    }
    func nextDueDate() async throws(OutboxError) -> Date? { try await wrapped.nextDueDate() }
    func beginAttempt(_ id: OutboxEntry.ID, at now: Date, lease: Duration) async throws(OutboxError) -> OutboxEntry {
        try await wrapped.beginAttempt(id, at: now, lease: lease)
    }
    func recordSuccess(_ id: OutboxEntry.ID, serverID: String?, at now: Date) async throws(OutboxError) {
        try await wrapped.recordSuccess(id, serverID: serverID, at: now)
    }
    func recordFailure(
        _ id: OutboxEntry.ID, _ failure: OutboxFailure, retryAt: Date, countsAsAttempt: Bool, serverAnsweredAt: Date?,
        outcomeUnknownAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await wrapped.recordFailure(
            id, failure, retryAt: retryAt, countsAsAttempt: countsAsAttempt, serverAnsweredAt: serverAnsweredAt,
            outcomeUnknownAt: outcomeUnknownAt)
    }
    func quarantine(_ id: OutboxEntry.ID, _ failure: OutboxFailure) async throws(OutboxError) -> OutboxCascade {
        try await wrapped.quarantine(id, failure)
    }
    func markConflict(_ id: OutboxEntry.ID, _ failure: OutboxFailure) async throws(OutboxError) {
        try await wrapped.markConflict(id, failure)
    }
    func retry(_ id: OutboxEntry.ID, at now: Date) async throws(OutboxError) -> OutboxCascade {
        try await wrapped.retry(id, at: now)
    }
    func discard(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCascade { try await wrapped.discard(id) }
    func entry(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntry? { try await wrapped.entry(id) }
    func entries(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry] {
        try await wrapped.entries(matching: filter)
    }
    func summary() async throws(OutboxError) -> OutboxSummary { try await wrapped.summary() }
    func dependents(of id: OutboxEntry.ID) async throws(OutboxError) -> [OutboxEntry.ID] {
        try await wrapped.dependents(of: id)
    }
    func completion(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCompletion? {
        try await wrapped.completion(of: id)
    }
    func clear() async throws(OutboxError) { try await wrapped.clear() }
    func prune(at now: Date) async throws(OutboxError) { try await wrapped.prune(at: now) }
    func close() async throws(OutboxError) { try await wrapped.close() }
}
