import OutboxModel
/// Which way `LogOutboxStore.enqueue(_:root:partition:configuration:)` went.
public enum OutboxEnqueuePath: String, Sendable, Hashable, Codable {
    /// No other process held the queue: this process opened it (moving in
    /// any spooled entries first), enqueued, and closed it again.
    case direct
    /// Another process holds the queue open: the entries were written to a
    /// spool of this process's own beside it, which the holder moves in.
    case spooled
}

/// An entry recorded in a spool: what the caller keeps to recognise it
/// later (its idempotency key is the one the server will see).
public struct OutboxSpooledEntry: Sendable, Hashable {
    /// The entry's id, which it keeps in the queue.
    public var id: OutboxEntry.ID
    /// The key every attempt at it carries: the app's, or the one derived
    /// from the partition and the id.
    public var idempotencyKey: String

    public init(id: OutboxEntry.ID, idempotencyKey: String) {
        self.id = id
        self.idempotencyKey = idempotencyKey
    }
}

/// What an enqueue from a process that may not own the queue did.
public enum OutboxSharedEnqueueResult: Sendable {
    /// Written into the queue itself, with the queue's answer for each request, in order.
    case direct([OutboxEnqueueResult])
    /// Written into a spool at the configuration's `enqueueDurability`, one
    /// per request, in order. The owner decides duplicates and coalescing
    /// when it moves them in: a spooled entry whose id (or app-supplied key)
    /// the queue already holds is dropped there as a duplicate.
    case spooled([OutboxSpooledEntry])

    /// Which way the call went.
    public var path: OutboxEnqueuePath {
        switch self {
        case .direct: .direct
        case .spooled: .spooled
        }
    }
}
