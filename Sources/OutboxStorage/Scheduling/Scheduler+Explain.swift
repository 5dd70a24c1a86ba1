import Foundation
import OutboxModel

/// Why an entry waits, from memory: the checks a claim makes
/// (``pick(now:limit:accepts:)`` in `Scheduler+DueSelection.swift`), in the
/// same order, named instead of skipped.
extension Scheduler {
    func explain(_ id: OutboxEntryID, now: Int64) -> OutboxExplanation {
        guard let entry = entries[id] else {
            guard let completion = completions[id] else { return OutboxExplanation(id: id, status: nil, reason: .unknown) }
            return OutboxExplanation(id: id, status: .succeeded, reason: .delivered(serverID: completion.serverID))
        }
        var explanation = OutboxExplanation(
            id: id, status: entry.status, type: strings.name(entry.type), reason: .due, lastFailure: failures[id]?.last)
        if let settled = OutboxExplanation.Reason.ofStatus(
            entry.status, attempt: Int(entry.attempts), leaseUntil: Date(milliseconds: entry.when),
            serverID: completions[id]?.serverID)
        {
            explanation.reason = settled
            return explanation
        }
        if entry.when > now { explanation.nextAttemptAt = Date(milliseconds: entry.when) }
        explanation.reason = waitingReason(entry, now: now)
        return explanation
    }

    /// What holds a sendable entry: the head of its scope, its time, then
    /// its dependencies — or nothing.
    private func waitingReason(_ entry: EntryMetadata, now: Int64) -> OutboxExplanation.Reason {
        if let queue = queue(of: entry), let head = scopes[queue]?.first, head != entry.id {
            return .behindInScope(scope: strings.name(entry.scope), head: head)
        }
        if entry.when > now { return .retryAt(Date(milliseconds: entry.when)) }
        if let parent = unmetDependency(entry) { return .waitingForParent(parent, parentStatus: entries[parent]?.status) }
        return .due
    }
}
