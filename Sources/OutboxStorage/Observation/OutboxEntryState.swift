import Foundation
import OutboxModel

/// Where one entry stands — what a row of the app's UI shows ("sending…",
/// "will retry at 10:42", "not sent: …", "sent") — without its request.
public struct OutboxEntryState: Sendable, Hashable {
    public var id: OutboxEntry.ID
    /// `succeeded` once delivered, also after the store removed the entry
    /// (while it keeps the entry's completion: `mappingRetention`).
    public var status: OutboxStatus
    /// Attempts that count toward ``maxAttempts`` so far.
    public var attempts: Int
    public var maxAttempts: Int
    /// When the next attempt may start, for an entry waiting for its retry
    /// time (`waitingToRetry`); `nil` when it may go at once, is being sent, or is
    /// done.
    public var nextAttemptAt: Date?
    /// Why the last attempt failed, or why the entry was set aside.
    public var lastFailure: OutboxFailure?
    /// The server's id for what the entry created, once delivered.
    public var serverID: String?

    public init(
        id: OutboxEntry.ID, status: OutboxStatus, attempts: Int = 0, maxAttempts: Int = 0, nextAttemptAt: Date? = nil,
        lastFailure: OutboxFailure? = nil, serverID: String? = nil
    ) {
        self.id = id
        self.status = status
        self.attempts = attempts
        self.maxAttempts = maxAttempts
        self.nextAttemptAt = nextAttemptAt
        self.lastFailure = lastFailure
        self.serverID = serverID
    }

    /// The state of a stored entry.
    public init(_ entry: OutboxEntry) {
        self.init(
            id: entry.id, status: entry.status, attempts: entry.attempts, maxAttempts: entry.maxAttempts,
            nextAttemptAt: entry.status == .waitingToRetry ? entry.nextAttemptAt : nil, lastFailure: entry.lastFailure,
            serverID: entry.serverID)
    }

    /// Delivered and gone: whether the server applied it is settled.
    public var isDelivered: Bool { status == .succeeded }
}

/// Why `OutboxDispatcher/waitUntilDelivered(_:)` gave up on an entry:
/// it will not be delivered without the app or a person.
public struct OutboxDeliveryFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// Quarantined: the server refused it, it ran out of
        /// attempts or of age, or a dependency failed. `OutboxDispatcher/retry(_:)`
        /// or `OutboxDispatcher/discard(_:)`.
        case quarantined
        /// Left in `conflict` for the app: a conflict, or an answer it
        /// cannot read as delivered or not (`OutboxDispatcher/retry(_:)`,
        /// `OutboxDispatcher/markDelivered(_:serverID:)` or discard).
        case conflict
        /// Removed without being delivered (discarded, replaced by a
        /// coalescing enqueue, or server-wins conflict).
        case discarded
    }

    public var id: OutboxEntry.ID
    public var kind: Kind
    /// Why the entry was set aside (its ``/OutboxModel/OutboxEntry/lastFailure``), when
    /// known; `nil` for a removed entry.
    public var failure: OutboxFailure?

    public init(id: OutboxEntry.ID, kind: Kind, failure: OutboxFailure?) {
        self.id = id
        self.kind = kind
        self.failure = failure
    }

    public var description: String {
        let what: String
        switch kind {
        case .quarantined: what = "quarantined"
        case .conflict: what = "left in conflict"
        case .discarded: what = "removed without delivery"
        }
        return "entry \(id) was \(what)" + (failure.map { ": \($0)" } ?? "")
    }
}
