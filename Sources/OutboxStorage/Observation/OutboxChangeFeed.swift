import Foundation
import OutboxLocking
import OutboxModel

/// Tells observers which entries changed, so they re-read what they show
/// instead of polling.
///
/// ``LogOutboxStore`` and ``InMemoryOutboxStore`` publish the ids of the
/// entries every change touched, once the change has reached the durability
/// its configuration asks for; `OutboxDispatcher` publishes changes of its
/// own state (paused, online, a drain starting or ending). Observers never
/// see the changes themselves, only *that* something changed: they read the
/// current state, so a change can be coalesced with the next one, never
/// lost, and a slow observer is never a backlog.
public final class OutboxChangeFeed: Sendable {
    private struct State {
        /// Held weakly: a subscription ends when its last copy is dropped.
        var subscribers: [UInt64: Subscriber] = [:]
        /// Subscribers of every change.
        var everything: Set<UInt64> = []
        /// Subscribers interested in one entry, by entry.
        var byEntry: [OutboxEntry.ID: Set<UInt64>] = [:]
        var nextID: UInt64 = 0
    }

    private struct Subscriber {
        weak var subscription: Subscription?
        /// `nil`: every entry, and the queue's own changes.
        var interest: Set<OutboxEntry.ID>?
    }

    private let state = Locked(State())

    public init() {}

    /// Wakes the observers of `ids` and of the whole queue.
    public func publish(_ ids: some Sequence<OutboxEntry.ID>) {
        let woken = state.withLock { state -> [(Subscription, [OutboxEntry.ID])] in
            guard !state.subscribers.isEmpty else { return [] }
            let all = Array(ids)
            var woken: [UInt64: [OutboxEntry.ID]] = [:]
            for key in state.everything { woken[key] = all }
            if !state.byEntry.isEmpty {
                for id in all {
                    for key in state.byEntry[id] ?? [] { woken[key, default: []].append(id) }
                }
            }
            return woken.compactMap { key, ids in state.subscribers[key]?.subscription.map { ($0, ids) } }
        }
        for (subscription, ids) in woken { subscription.note(ids) }
    }

    /// Wakes the observers of the whole queue: something that is not an
    /// entry changed (the dispatcher paused, went offline, started or
    /// finished a drain).
    public func publishQueueChange() { publish(EmptyCollection()) }

    /// Changes from now on: to `entries` only, or (`nil`) to anything.
    /// Subscribe *before* reading the state you observe, so no change
    /// between the read and the subscription is missed.
    public func subscribe(to entries: Set<OutboxEntry.ID>? = nil) -> OutboxChanges {
        let key = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        let subscription = Subscription(feed: self, key: key)
        state.withLock { state in
            state.subscribers[key] = Subscriber(subscription: subscription, interest: entries)
            if let entries {
                for id in entries { state.byEntry[id, default: []].insert(key) }
            } else {
                state.everything.insert(key)
            }
        }
        return OutboxChanges(subscription: subscription)
    }

    fileprivate func unsubscribe(_ key: UInt64) {
        state.withLock { state in
            guard let subscriber = state.subscribers.removeValue(forKey: key) else { return }
            state.everything.remove(key)
            for id in subscriber.interest ?? [] {
                state.byEntry[id]?.remove(key)
                if state.byEntry[id]?.isEmpty == true { state.byEntry[id] = nil }
            }
        }
    }
}

/// The changes one subscriber has not taken yet, and its waiting reader.
final class Subscription: Sendable {
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

/// What an ``OutboxChangeFeed`` subscriber receives: the ids of the entries
/// that changed since it last looked (empty when only the queue's own state
/// changed). Iterate it once; it ends when the iterating task is cancelled.
public struct OutboxChanges: AsyncSequence, Sendable {
    public typealias Element = Set<OutboxEntry.ID>
    let subscription: Subscription

    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: Subscription
        public mutating func next() async -> Set<OutboxEntry.ID>? { await subscription.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(subscription: subscription) }

    /// The next change (see the type's description), or `nil` once the
    /// calling task is cancelled.
    public func next() async -> Set<OutboxEntry.ID>? { await subscription.next() }
}
