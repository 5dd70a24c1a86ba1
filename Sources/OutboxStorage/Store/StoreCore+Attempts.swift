import Foundation
import OutboxModel

/// What the dispatcher does to entries: claims, attempts and their outcomes,
/// and the decisions a person makes (retry, discard, quarantine, conflict).
extension StoreCore {
    func claimDue(
        at now: Date, limit: Int, lease: Duration, accepting: (String) -> Bool
    ) async throws(OutboxError) -> OutboxClaim {
        let start = try Admission.milliseconds(now, "now")
        let leaseUntil = start + (try Admission.milliseconds(lease, "the lease"))
        var durability = configuration.attemptDurability
        let ((claimed, unaccepted), acknowledgement) = try await submit { scheduler in
            let result = scheduler.claim(now: start, limit: max(0, limit), leaseUntil: leaseUntil, accepts: accepting)
            return ((result.claimed, result.unaccepted), result.changes)
        } whileLocked: { state, result, _ in
            if !result.0.isEmpty { durability = self.durabilityForSending(&state) }
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
        let (_, acknowledgement) = try await submit { scheduler throws(OutboxError) in
            ((), try scheduler.beginAttempt(id, now: start, leaseUntil: leaseUntil))
        } whileLocked: { state, _, _ in
            durability = self.durabilityForSending(&state)
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
            var changes: StoreChanges = []
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
        _ id: OutboxEntryID, _ failure: OutboxFailure, retryAt: Date, countsAsAttempt: Bool, serverAnsweredAt: Date?,
        outcomeUnknownAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try Admission.failure(failure, entry: id)
        let retryTime = try Admission.milliseconds(retryAt, "retryAt", entry: id)
        let answeredTime = try serverAnsweredAt.map { date throws(OutboxError) in try Admission.milliseconds(date, "serverAnsweredAt", entry: id) }
        let unknownTime = try outcomeUnknownAt.map { date throws(OutboxError) in try Admission.milliseconds(date, "outcomeUnknownAt", entry: id) }
        return try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            let (status, cascade, changes) = try scheduler.fail(
                id, failure, retryAt: retryTime, counted: countsAsAttempt,
                answeredAt: answeredTime, outcomeUnknownAt: unknownTime)
            return ((status, cascade), changes)
        }
    }

    func reclaimExpiredLeases(at now: Date) async throws(OutboxError) -> [OutboxEntryID] {
        try await perform(configuration.attemptDurability) { scheduler in
            let reclaimed = scheduler.reclaimExpiredLeases(now: now.milliseconds)
            return (reclaimed, StoreChanges(reclaimed.lazy.map { .state($0) }))
        }
    }

    func quarantine(_ id: OutboxEntryID, _ failure: OutboxFailure) async throws(OutboxError) -> OutboxCascade {
        try Admission.failure(failure, entry: id)
        return try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            try scheduler.quarantine(id, failure)
        }
    }

    func markConflict(_ id: OutboxEntryID, _ failure: OutboxFailure) async throws(OutboxError) {
        try Admission.failure(failure, entry: id)
        try await perform(configuration.outcomeDurability) { scheduler throws(OutboxError) in
            ((), try scheduler.conflict(id, failure))
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
}
