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
