import Foundation
import OutboxLocking
import OutboxModel

/// The queue's one observation channel: it tells observers which entries
/// changed, so they re-read what they show instead of polling, and carries
/// the dispatcher's ``/OutboxModel/OutboxEvent``s to their streams.
///
/// ``LogOutboxStore`` and ``InMemoryOutboxStore`` publish the ids of the
/// entries every change touched, once the change has reached the durability
/// its configuration asks for; `OutboxDispatcher` publishes changes of its
/// own state (paused, online, a drain starting or ending) and its events.
/// Change observers never see the changes themselves, only *that* something
/// changed: they read the current state, so a change can be coalesced with
/// the next one, never lost, and a slow observer is never a backlog. Event
/// streams get each event (the newest 10,000 while their reader is behind).
public final class OutboxChangeFeed: Sendable {
    private struct State {
        /// Held weakly: a subscription ends when its last copy is dropped.
        var subscribers: [UInt64: Subscriber] = [:]
        /// Subscribers of every change.
        var everything: Set<UInt64> = []
        /// Subscribers interested in one entry, by entry.
        var byEntry: [OutboxEntry.ID: Set<UInt64>] = [:]
        /// Event streams, by stream, with the publisher whose events they get.
        var eventStreams: [UInt64: EventStream] = [:]
        var nextID: UInt64 = 0

        mutating func newKey() -> UInt64 {
            nextID += 1
            return nextID
        }
    }

    private struct Subscriber {
        weak var subscription: FeedSubscription?
        /// `nil`: every entry, and the queue's own changes.
        var interest: Set<OutboxEntry.ID>?
    }

    private struct EventStream {
        var publisher: UInt64
        var continuation: AsyncStream<OutboxEvent>.Continuation
    }

    private let state = Locked(State())
    /// Whether an event also wakes the change observers of its entry: for a
    /// feed no store announces to (a dispatcher's own), where the events are
    /// the only news of a change.
    private let eventsAreChanges: Bool

    /// A feed for a store, which announces its own changes.
    public convenience init() { self.init(eventsAreChanges: false) }

    package init(eventsAreChanges: Bool) { self.eventsAreChanges = eventsAreChanges }

    /// Wakes the observers of `ids` and of the whole queue.
    public func publish(_ ids: some Sequence<OutboxEntry.ID>) {
        let woken = state.withLock { state -> [(FeedSubscription, [OutboxEntry.ID])] in
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
        let key = state.withLock { $0.newKey() }
        let subscription = FeedSubscription(feed: self, key: key)
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

    // MARK: Events

    /// A publisher of events: its streams end when it finishes them.
    package func eventPublisher() -> OutboxEventPublisher {
        OutboxEventPublisher(feed: self, key: state.withLock { $0.newKey() })
    }

    fileprivate func events(from publisher: UInt64) -> AsyncStream<OutboxEvent> {
        let (stream, continuation) = AsyncStream<OutboxEvent>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let key = state.withLock { state -> UInt64 in
            let key = state.newKey()
            state.eventStreams[key] = EventStream(publisher: publisher, continuation: continuation)
            return key
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.eventStreams.removeValue(forKey: key) }
        }
        return stream
    }

    /// One lock and nothing else when nobody listens: the event is built
    /// only if someone will receive it.
    fileprivate func publish(_ event: () -> OutboxEvent, from publisher: UInt64) {
        let (streams, woken) = state.withLock { state -> ([AsyncStream<OutboxEvent>.Continuation], Bool) in
            (state.eventStreams.values.compactMap { $0.publisher == publisher ? $0.continuation : nil },
             eventsAreChanges && !state.subscribers.isEmpty)
        }
        guard !streams.isEmpty || woken else { return }
        let event = event()
        if woken {
            if let id = event.entryID { publish(CollectionOfOne(id)) } else { publishQueueChange() }
        }
        for stream in streams { stream.yield(event) }
    }

    fileprivate func finishEvents(from publisher: UInt64) {
        let streams = state.withLock { state in
            state.eventStreams.values.compactMap { $0.publisher == publisher ? $0.continuation : nil }
        }
        for stream in streams { stream.finish() }
    }

    func unsubscribe(_ key: UInt64) {
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

/// What an ``OutboxChangeFeed`` subscriber receives: the ids of the entries
/// that changed since it last looked (empty when only the queue's own state
/// changed). Iterate it once; it ends when the iterating task is cancelled.
public struct OutboxChanges: AsyncSequence, Sendable {
    public typealias Element = Set<OutboxEntry.ID>
    let subscription: FeedSubscription

    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: FeedSubscription
        public mutating func next() async -> Set<OutboxEntry.ID>? { await subscription.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(subscription: subscription) }

    /// The next change (see the type's description), or `nil` once the
    /// calling task is cancelled.
    public func next() async -> Set<OutboxEntry.ID>? { await subscription.next() }
}

/// Where a dispatcher publishes its ``/OutboxModel/OutboxEvent``s: into its
/// store's ``OutboxChangeFeed``, to the streams opened through it.
package struct OutboxEventPublisher: Sendable {
    let feed: OutboxChangeFeed
    let key: UInt64

    /// A stream of the events published from now on, until ``finish()``.
    package func stream() -> AsyncStream<OutboxEvent> { feed.events(from: key) }

    package func publish(_ event: @autoclosure () -> OutboxEvent) { feed.publish(event, from: key) }

    /// Ends every stream opened through this publisher.
    package func finish() { feed.finishEvents(from: key) }
}
