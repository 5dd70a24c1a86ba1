import Foundation
import OutboxModel

extension OutboxStore {
    /// The oldest `limit` writes not delivered (pending, in flight, waiting
    /// to retry, quarantined, in conflict), oldest first, each with why it
    /// waits as `explain` says — the store's ``/OutboxStorage/OutboxStore/explain(_:at:)``, or a
    /// dispatcher's, which adds its own state: a snapshot's
    /// ``/OutboxModel/OutboxQueueSnapshot/waiting``.
    ///
    /// - Complexity: reads the bodies of those `limit` entries.
    public func oldestWaiting(
        limit: Int = OutboxQueueSnapshot.waitingKept,
        explain: @Sendable (OutboxEntry.ID) async throws(OutboxError) -> OutboxExplanation
    ) async throws(OutboxError) -> [OutboxQueueSnapshot.Waiting] {
        let oldest = try await entries(
            matching: OutboxFilter(statuses: [.pending, .inFlight, .waitingToRetry, .quarantined, .conflict], limit: limit))
        var waiting: [OutboxQueueSnapshot.Waiting] = []
        for entry in oldest {
            let why = try await explain(entry.id)
            waiting.append(
                OutboxQueueSnapshot.Waiting(
                    id: entry.id, status: entry.status, enqueuedAt: entry.createdAt, reason: why.reason.name,
                    why: why.description))
        }
        return waiting
    }
}
