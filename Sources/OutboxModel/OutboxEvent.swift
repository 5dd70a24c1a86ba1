import Foundation

/// Something that happened to an entry, for optimistic UI, badges and logs:
/// what `OutboxDispatcher.events()` yields. Events travel through the
/// store's change feed, the same one that wakes the state observers.
public enum OutboxEvent: Sendable, Hashable {
    /// Recorded: the commit point. Show it as done (optimistically).
    case enqueued(OutboxEntry)
    /// An attempt started.
    case sending(OutboxEntry.ID, attempt: Int)
    /// Delivered; `serverID` is what the server calls it now.
    case delivered(OutboxEntry.ID, serverID: String?)
    /// The server answered from its idempotency record: an earlier attempt
    /// was applied and its answer lost. Published just before
    /// ``delivered(_:serverID:)`` for the same entry.
    case replayed(OutboxEntry.ID, serverID: String?)
    /// The attempt failed; the next starts at `at`. Also sent for attempts
    /// that did not reach the server, for in-progress polls and for an
    /// unavailable server (none counts toward `maxAttempts`; the failure's
    /// cause says which).
    case waitingToRetry(OutboxEntry.ID, at: Date, failure: OutboxFailure)
    /// The request was sent but its answer was lost (dropped connection,
    /// timeout, cancelled attempt): resent promptly at `at`, not counted as
    /// a failed attempt (cause ``OutboxFailure/Cause/interrupted``).
    case interrupted(OutboxEntry.ID, at: Date, failure: OutboxFailure)
    /// Quarantined: tell the user; it needs retry or discard.
    case quarantined(OutboxEntry.ID, failure: OutboxFailure)
    /// Left in `conflict` for the app to resolve.
    case conflict(OutboxEntry.ID, failure: OutboxFailure)
    /// Removed without delivery.
    case discarded(OutboxEntry.ID, because: OutboxDiscard)
    /// A `local:` reference was replaced by the server's id before sending.
    case remapped(OutboxEntry.ID, local: OutboxEntry.ID, serverID: String)
    /// No handler is registered for this entry's type: it is left alone.
    case unhandled(OutboxEntry.ID, type: String)
    /// The store failed while the dispatcher worked (claiming entries,
    /// recording an attempt's outcome — then for that entry —, reclaiming
    /// leases, pruning). A store that fails refuses every later call until
    /// it is reopened (Docs/OUTBOX.md): show it, and reopen the store.
    case storeFailed(OutboxEntry.ID?, error: OutboxError)
    /// The queue holds unsent writes and none has moved for longer than the
    /// dispatcher's `stallThreshold`: published once per stall, with why the
    /// oldest waits. The queue moving again ends the stall.
    case stalled(OutboxStall)

    /// The entry the event is about, if it is about one.
    public var entryID: OutboxEntry.ID? {
        switch self {
        case .enqueued(let entry): return entry.id
        case .sending(let id, _), .delivered(let id, _), .replayed(let id, _), .waitingToRetry(let id, _, _),
            .interrupted(let id, _, _), .quarantined(let id, _), .conflict(let id, _), .discarded(let id, _),
            .remapped(let id, _, _), .unhandled(let id, _):
            return id
        case .storeFailed(let id, _): return id
        case .stalled: return nil  // about the whole queue
        }
    }
}
