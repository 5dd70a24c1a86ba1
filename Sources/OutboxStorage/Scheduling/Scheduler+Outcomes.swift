import Foundation
import OutboxModel

/// Attempts and their outcomes: the status transitions of an entry after it
/// is claimed (success, failure, quarantine, conflict) and the person's way
/// back (retry).
extension Scheduler {
    /// Starts an attempt: the entry goes in flight with a lease until
    /// `leaseUntil`, and the attempt is counted.
    mutating func beginAttempt(_ id: OutboxEntryID, now: Int64, leaseUntil: Int64) throws(OutboxError) -> StoreChanges {
        var entry = try existing(id)
        guard entry.status.isSendable else { throw transitionError(entry, to: .inFlight) }
        guard isHead(entry) else {
            throw OutboxError(.invalidTransition, "an earlier entry of its scope is still unfinished", entry: id)
        }
        if let parent = unmetDependency(entry) {
            throw OutboxError(.invalidTransition, "waiting for dependency \(parent)", entry: id)
        }
        guard entry.when <= now else {
            throw OutboxError(.invalidTransition, "not due until \(Date(milliseconds: entry.when))", entry: id)
        }
        setStatus(&entry, .inFlight)
        entry.attempts &+= 1
        entry.when = leaseUntil
        commit(entry)
        return StoreChanges(.state(id))
    }

    /// Records delivery: the entry is removed (or kept as `succeeded` for the
    /// audit window) and its completion stored, with the server's id.
    mutating func succeed(_ id: OutboxEntryID, serverID: String?, now: Int64) throws(OutboxError) -> StoreChanges {
        var entry = try existing(id)
        guard entry.status.canMove(to: .succeeded) else { throw transitionError(entry, to: .succeeded) }
        completions[id] = Completion(serverID: serverID, syncedAt: now, idempotencyKey: appKeys[id])
        failures[id] = nil
        let waitingChildren = blocked.removeValue(forKey: id) ?? []
        var changes: StoreChanges = []
        if configuration.succeededRetention != nil {
            leaveScope(entry)
            setStatus(&entry, .succeeded)
            entry.when = now
            commit(entry)
            changes.append(.state(id))
        } else {
            _ = removeEntry(id, cascade: nil)
            changes.append(.remove(id))
        }
        changes.append(.completion(id))
        // Children waiting on it may go now.
        for child in waitingChildren { consider(child) }
        dependents[id] = nil
        return changes
    }

    /// Records a transient failure: retried at `retryAt`, unless the entry
    /// has used all its attempts, in which case it is quarantined. An
    /// attempt that is not `counted` is given back (it never quarantines);
    /// `answeredAt` is when the server answered it, if it did.
    /// `outcomeUnknownAt` says the attempt's outcome is unknown (sent, answer
    /// lost) and when it was made; the earliest such time is kept.
    mutating func fail(
        _ id: OutboxEntryID, _ failure: OutboxFailure, retryAt: Int64, counted: Bool = true,
        answeredAt: Int64? = nil, outcomeUnknownAt: Int64? = nil
    ) throws(OutboxError) -> (OutboxStatus, OutboxCascade, StoreChanges) {
        var entry = try existing(id)
        guard entry.status.canMove(to: .waitingToRetry) else { throw transitionError(entry, to: .waitingToRetry) }
        let firstAnswer = failures[id]?.firstAnsweredAt ?? answeredAt
        let unknownSince = [failures[id]?.outcomeUnknownSince, outcomeUnknownAt].compactMap { $0 }.min()
        if !counted {
            entry.attempts = entry.attempts > 0 ? entry.attempts - 1 : 0
        } else if entry.attempts >= entry.maxAttempts {
            let (cascade, changes) = try quarantine(id, failure.becoming(.attemptsUsedUp))
            return (.quarantined, cascade, changes)
        }
        setStatus(&entry, .waitingToRetry)
        entry.when = retryAt
        failures[id] = FailureInfo(last: failure.kept, firstAnsweredAt: firstAnswer, outcomeUnknownSince: unknownSince)
        commit(entry)
        consider(id)
        return (.waitingToRetry, OutboxCascade(), StoreChanges(.state(id)))
    }

    /// Puts in-flight entries whose lease ended at or before `now` back in
    /// the queue: pending, due at once, the attempt counted. Returns them.
    mutating func reclaimExpiredLeases(now: Int64) -> [OutboxEntryID] {
        let expired = entries.values.filter { $0.status == .inFlight && $0.when <= now }.map(\.id)
        for id in expired {
            guard var entry = entries[id] else { continue }
            let leaseEnd = entry.when
            setStatus(&entry, .pending)
            entry.when = now
            failures[id] = FailureInfo(
                last: OutboxFailure(.leaseExpired), firstAnsweredAt: failures[id]?.firstAnsweredAt,
                outcomeUnknownSince: min(failures[id]?.outcomeUnknownSince ?? leaseEnd, leaseEnd))
            commit(entry)
            consider(id)
        }
        return expired
    }

    /// Notes that an attempt of `id` made at `since` (ms) has an unknown
    /// outcome, keeping the earliest such time.
    mutating func markOutcomeUnknown(_ id: OutboxEntryID, since: Int64) {
        var failure = failures[id] ?? FailureInfo()
        failure.outcomeUnknownSince = min(failure.outcomeUnknownSince ?? since, since)
        failures[id] = failure
    }

    /// Quarantines an entry and, transitively, every entry that
    /// depends on it (cause ``/OutboxModel/OutboxFailure/Cause/dependency(_:)``).
    mutating func quarantine(
        _ id: OutboxEntryID, _ failure: OutboxFailure
    ) throws(OutboxError) -> (OutboxCascade, StoreChanges) {
        try setAside(id, as: .quarantined, failure)
        var changes = StoreChanges(.state(id))
        let cascade = cascadeQuarantine(from: id, cause: .quarantined(id), changes: &changes)
        return (quarantineCascade(cascade), changes)
    }

    /// Records a conflict left for a person to resolve.
    mutating func conflict(_ id: OutboxEntryID, _ failure: OutboxFailure) throws(OutboxError) -> StoreChanges {
        try setAside(id, as: .conflict, failure)
        return StoreChanges(.state(id))
    }

    /// Takes an entry out of its scope for a person to decide on
    /// (`quarantined` or `conflict`), keeping why.
    private mutating func setAside(
        _ id: OutboxEntryID, as status: OutboxStatus, _ failure: OutboxFailure
    ) throws(OutboxError) {
        var entry = try existing(id)
        guard entry.status.canMove(to: status) else { throw transitionError(entry, to: status) }
        leaveScope(entry)
        setStatus(&entry, status)
        failures[id] = FailureInfo(last: failure.kept)
        commit(entry)
    }

    /// Puts a `quarantined` or `conflict` entry back to `pending` with a fresh
    /// attempt budget; its dependents quarantined because of it come back too.
    mutating func retry(_ id: OutboxEntryID, now: Int64) throws(OutboxError) -> (OutboxCascade, StoreChanges) {
        let entry = try existing(id)
        guard entry.status == .quarantined || entry.status == .conflict else { throw transitionError(entry, to: .pending) }
        try checkDependenciesCanSucceed(entry)
        var changes: StoreChanges = []
        revive(id, now: now, changes: &changes)
        let revived = reviveDependents(of: id, now: now, changes: &changes)
        return (OutboxCascade(dependents: revived), changes)
    }

    mutating func revive(_ id: OutboxEntryID, now: Int64, changes: inout StoreChanges) {
        guard var entry = entries[id] else { return }
        setStatus(&entry, .pending)
        entry.attempts = 0
        entry.when = now
        failures[id] = nil
        commit(entry)
        insertIntoScope(entries[id]!)
        noteUnsent(entries[id]!)
        consider(id)
        changes.append(.state(id))
    }
}
