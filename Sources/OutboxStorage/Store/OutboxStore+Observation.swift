import Foundation
import OutboxModel

// The observation calls' defaults, for stores that have no faster way.
extension OutboxStore {
    public func state(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntryState? {
        if let entry = try await entry(id) { return OutboxEntryState(entry) }
        guard let completion = try await completion(of: id) else { return nil }
        return OutboxEntryState(id: id, status: .succeeded, serverID: completion.serverID)
    }

    public func ids(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry.ID] {
        try await entries(matching: filter).map(\.id)
    }

    public var changeFeed: OutboxChangeFeed? { nil }

    public func publishSnapshot(_ snapshot: OutboxQueueSnapshot) async throws(OutboxError) {}

    public func explain(_ id: OutboxEntry.ID, at now: Date) async throws(OutboxError) -> OutboxExplanation {
        guard let entry = try await entry(id) else {
            guard let completion = try await completion(of: id) else {
                return OutboxExplanation(id: id, status: nil, reason: .unknown)
            }
            return OutboxExplanation(id: id, status: .succeeded, reason: .delivered(serverID: completion.serverID))
        }
        var explanation = OutboxExplanation(
            id: id, status: entry.status, type: entry.type, reason: .due, lastFailure: entry.lastFailure)
        if let settled = OutboxExplanation.Reason.ofStatus(
            entry.status, attempt: entry.attempts, leaseUntil: entry.nextAttemptAt, serverID: entry.serverID)
        {
            explanation.reason = settled
        } else if entry.nextAttemptAt > now {
            explanation.nextAttemptAt = entry.nextAttemptAt
            explanation.reason = .retryAt(entry.nextAttemptAt)
        } else {
            for parent in entry.dependencies {
                guard try await completion(of: parent) == nil else { continue }
                explanation.reason = .waitingForParent(parent, parentStatus: try await self.entry(parent)?.status)
                break
            }
        }
        return explanation
    }
}

extension StoreChange {
    /// The entry a change touches (a pruned completion touches none that is observed).
    var entryID: OutboxEntryID? {
        switch self {
        case .newEntry(let id), .state(let id), .remove(let id), .completion(let id): id
        case .removeCompletion: nil
        }
    }
}

extension StoreCore {
    /// ``OutboxStore/state(of:)`` from memory: no body is read.
    func state(of id: OutboxEntryID) throws(OutboxError) -> OutboxEntryState? {
        try read { scheduler in
            if let metadata = scheduler.metadata(id) {
                let failure = scheduler.failure(id)
                let waiting = metadata.status == .waitingToRetry && metadata.when != EntryMetadata.immediately
                return OutboxEntryState(
                    id: id, status: metadata.status, attempts: Int(metadata.attempts), maxAttempts: Int(metadata.maxAttempts),
                    nextAttemptAt: waiting ? Date(milliseconds: metadata.when) : nil, lastFailure: failure?.last,
                    serverID: scheduler.completion(id)?.serverID)
            }
            guard let completion = scheduler.completion(id) else { return nil }
            return OutboxEntryState(id: id, status: .succeeded, serverID: completion.serverID)
        }
    }

    /// ``OutboxStore/explain(_:at:)`` from memory.
    func explain(_ id: OutboxEntryID, at now: Date) throws(OutboxError) -> OutboxExplanation {
        let time = try Admission.milliseconds(now, "now", entry: id)
        return try read { $0.explain(id, now: time) }
    }

    /// ``OutboxStore/ids(matching:)`` from memory.
    func ids(matching filter: OutboxFilter) throws(OutboxError) -> [OutboxEntryID] {
        try read { $0.ids(matching: filter) }
    }

    /// Counts and bytes by status, the oldest unsent entry's creation time
    /// and the next retry time.
    func fullSummary() throws(OutboxError) -> OutboxSummary {
        try read { scheduler in
            var summary = scheduler.summary
            summary.oldestUnsentAt = scheduler.oldestUnsentCreation().map(Date.init(milliseconds:))
            summary.nextAttemptAt = scheduler.nextDueTime().flatMap { $0 > EntryMetadata.immediately ? Date(milliseconds: $0) : nil }
            return summary
        }
    }
}
