import Foundation
import OutboxStorage
import OutboxModel

/// The server said it cannot take requests now (503, 429, 502, 504 by
/// default: ``OutboxDispatcherConfiguration/unavailableStatuses``) — not
/// that this request failed.
extension DeliveryAttempts {
    /// Retries after the server's (clamped) `Retry-After`, or after the
    /// capped backoff of the unavailable answers in a row; the attempt is
    /// given back, so a day of 503s never uses up `maxAttempts`. Only the
    /// maximum age, counted from the server's first answer, ends it:
    /// quarantined, as any expiry, when the retry would fall past it.
    func recordUnavailable(
        _ entry: OutboxEntry, _ failure: OutboxFailure, retryAfter: Duration?, into report: inout OutboxFlushReport
    ) async throws(OutboxError) {
        let now = clock.now()
        let retryAt = now.adding(retryAfter.map(clampRetryAfter) ?? nextDelay(for: entry.id, using: configuration.backoff))
        if let maximumAge = configuration.maximumAge, retryAt >= (entry.firstAnswerAt ?? now).adding(maximumAge) {
            try await quarantine(entry, failure.becoming(.expired), into: &report)
            return
        }
        let (newStatus, cascade) = try await store.recordFailure(
            entry.id, failure, retryAt: retryAt, countsAsAttempt: false, serverAnsweredAt: now, outcomeUnknownAt: nil)
        guard newStatus != .quarantined else {  // a store that counts it anyway
            publishGaveUp(entry, failure, cascade: cascade, into: &report)
            return
        }
        report.waitingToRetry += 1
        metrics.waitingToRetry.increment()
        publish(.waitingToRetry(entry.id, at: retryAt, failure: failure))
    }
}
