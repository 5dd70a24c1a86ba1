import OutboxLocking
import OutboxModel

/// The changes one subscriber has not taken yet, and its waiting reader.
final class FeedSubscription: Sendable {
    private struct State {
        var changed: Set<OutboxEntry.ID> = []
        var pending = false
        var waiter: CheckedContinuation<Set<OutboxEntry.ID>?, Never>?
        var finished = false
    }

    private let state = Locked(State())
    private let feed: OutboxChangeFeed
    private let key: UInt64

    init(feed: OutboxChangeFeed, key: UInt64) {
        self.feed = feed
        self.key = key
    }

    deinit { feed.unsubscribe(key) }

    func note(_ ids: [OutboxEntry.ID]) {
        let wake = state.withLock { state -> (CheckedContinuation<Set<OutboxEntry.ID>?, Never>, Set<OutboxEntry.ID>)? in
            guard !state.finished else { return nil }
            state.changed.formUnion(ids)
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            defer { state.changed = [] }
            return (waiter, state.changed)
        }
        if let (waiter, changed) = wake { waiter.resume(returning: changed) }
    }

    /// The entries changed since the last call (empty: only the queue's own
    /// state changed), waiting for the next change if none is pending;
    /// `nil` once the calling task is cancelled.
    func next() async -> Set<OutboxEntry.ID>? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Set<OutboxEntry.ID>?, Never>) in
                let ready = state.withLock { state -> Set<OutboxEntry.ID>?? in
                    if state.finished || Task.isCancelled { return .some(nil) }
                    if state.pending {
                        state.pending = false
                        defer { state.changed = [] }
                        return .some(state.changed)
                    }
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Set<OutboxEntry.ID>?, Never>? in
                state.finished = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }
}
