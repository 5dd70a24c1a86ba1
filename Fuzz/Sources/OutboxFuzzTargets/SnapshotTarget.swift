import Foundation
import Outbox

/// The queue's snapshot (`SNAPSHOT`'s JSON, ``OutboxQueueSnapshot/init(decoding:)``):
/// any bytes are refused with a typed error or read as a snapshot within
/// the limits a snapshot keeps, which encodes and reads back with the same
/// counts, items and state — nothing traps.
enum SnapshotTarget {
    static func run(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        let snapshot: OutboxQueueSnapshot
        do { snapshot = try OutboxQueueSnapshot(decoding: Array(input)) } catch { return }
        if snapshot.seconds.count > OutboxQueueSnapshot.secondsKept || snapshot.waiting.count > OutboxQueueSnapshot.waitingKept
            || snapshot.failures.count > OutboxQueueSnapshot.causesKept || snapshot.attempts.count > OutboxQueueSnapshot.attemptsKept
        {
            throw FuzzViolation("a snapshot beyond the limits was read: \(snapshot)")
        }
        let again: OutboxQueueSnapshot
        do { again = try OutboxQueueSnapshot(decoding: snapshot.encoded()) } catch {
            throw FuzzViolation("a snapshot that was read does not read back once written: \(error)")
        }
        // Times and latencies are doubles in JSON, so compare what they count, not their last bits.
        guard again.counts == snapshot.counts, again.seconds.count == snapshot.seconds.count,
            again.waiting.map(\.id) == snapshot.waiting.map(\.id), again.failures.map(\.cause) == snapshot.failures.map(\.cause),
            again.attempts.map(\.id) == snapshot.attempts.map(\.id), again.attempts.map(\.outcome) == snapshot.attempts.map(\.outcome),
            again.dispatcher == snapshot.dispatcher
        else { throw FuzzViolation("a snapshot read back differently: \(snapshot) then \(again)") }
    }

    static func seeds() -> [[UInt8]] {
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        let full = OutboxQueueSnapshot(
            takenAt: at, processID: 4242, dispatcher: .running,
            summary: OutboxSummary(counts: [.pending: 3, .inFlight: 1, .waitingToRetry: 2, .quarantined: 1], oldestUnsentAt: at),
            stalledSince: at,
            seconds: [
                OutboxQueueSnapshot.Second(at: at, delivered: 12, failed: 1, latencyP50: 41.5, latencyP95: 120),
                OutboxQueueSnapshot.Second(at: at.addingTimeInterval(1), delivered: 0, failed: 2, latencyP50: nil, latencyP95: nil),
            ],
            latencyP50: 41.5, latencyP95: 120,
            waiting: [
                OutboxQueueSnapshot.Waiting(
                    id: OutboxEntry.ID(UUID(uuidString: "6F9619FF-8B86-4011-B42D-00CF4FC964FF")!), status: .waitingToRetry,
                    enqueuedAt: at, reason: "retryAt", why: "waiting to retry at 2026-01-01T00:00:05Z after unavailable, HTTP 503")
            ],
            failures: [OutboxQueueSnapshot.FailureCount(cause: "unavailable, HTTP 503", count: 3, lastAt: at)],
            attempts: [
                OutboxQueueSnapshot.Attempt(
                    id: OutboxEntry.ID(UUID(uuidString: "6F9619FF-8B86-4011-B42D-00CF4FC964FF")!), attempt: 2, startedAt: at,
                    endedAt: at.addingTimeInterval(0.12), outcome: .waitingToRetry, cause: "unavailable, HTTP 503",
                    detail: "unavailable: HTTP 503"),
                OutboxQueueSnapshot.Attempt(
                    id: OutboxEntry.ID(UUID(uuidString: "0B1C3A5E-2D4F-4E6A-8B9C-0D1E2F3A4B5C")!), attempt: 1, startedAt: at,
                    endedAt: at.addingTimeInterval(0.04), outcome: .delivered),
            ])
        let empty = OutboxQueueSnapshot(
            takenAt: at, processID: 1, dispatcher: .stopped, summary: OutboxSummary(), stalledSince: nil, seconds: [],
            waiting: [], failures: [])
        return [full.encoded(), empty.encoded()]
    }
}
