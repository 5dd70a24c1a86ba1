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
