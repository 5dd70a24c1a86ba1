import Foundation
import OutboxStorage
import OutboxModel

/// Observing the queue: one entry (its state, its changes, its delivery),
/// and the whole queue (a pending-writes badge, idleness, pending writes).
/// Everything here re-reads the store when the change feed says something
/// changed: nothing polls, and nothing is missed between a read and a wait.
extension OutboxDispatcher {
    /// Where `id` stands now; `nil` for an id the store does not know. A
    /// delivered entry reads `succeeded` with its server id while the store
    /// keeps its completion (`mappingRetention`, 7 days by default).
    public nonisolated func status(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntryState? {
        try await store.state(of: id)
    }

    /// The state of `id` now, then each time it changes, until it is
    /// delivered (the last element is `succeeded`) or removed (discarded,
    /// replaced by coalescing: the sequence just ends). Ends at once for an
    /// id the store does not know, and when the iterating task is cancelled.
    /// Quarantined and conflicting entries are not final (they may be
    /// retried): the sequence goes on.
    ///
    /// ```swift
    /// for try await state in dispatcher.updates(of: sent.id) {
    ///     row.label = state.status == .waitingToRetry ? "retrying at \(state.nextAttemptAt!)" : "\(state.status)"
    /// }
    /// ```
    public nonisolated func updates(of id: OutboxEntry.ID) -> OutboxEntryUpdates {
        OutboxEntryUpdates(store: store, id: id, changes: feed.subscribe(to: [id]))
    }

    /// Waits until `id` is delivered and returns the server's id for it.
    ///
    /// - Throws: ``OutboxDeliveryFailure`` once the entry will not be
    ///   delivered without the app: quarantined (with its failure),
    ///   left in `conflict`, or removed without delivery;
    ///   ``/OutboxModel/OutboxError`` (`.notFound`) for an id the store does not know, or
    ///   a store error; `CancellationError` if the waiting task is cancelled.
    ///   An entry that is retried later can be waited for again.
    public nonisolated func waitUntilDelivered(_ id: OutboxEntry.ID) async throws -> String? {
        let changes = feed.subscribe(to: [id])
        var known = false
        while true {
            guard let state = try await store.state(of: id) else {
                if known {
                    throw OutboxDeliveryFailure(id: id, kind: .discarded, failure: nil)
                }
                throw OutboxError(.notFound, "no such entry", entry: id)
            }
            known = true
            switch state.status {
            case .succeeded: return state.serverID
            case .quarantined:
                throw OutboxDeliveryFailure(id: id, kind: .quarantined, failure: state.lastFailure)
            case .conflict:
                throw OutboxDeliveryFailure(id: id, kind: .conflict, failure: state.lastFailure)
            case .pending, .inFlight, .waitingToRetry: break
            }
            guard await changes.next() != nil else { throw CancellationError() }
        }
    }

    /// Whether ``pause()`` holds the dispatcher (until ``resume()``).
    public var isPaused: Bool { paused }

    /// Whether the dispatcher believes the device is online (its
    /// connectivity monitor, or ``connectivityChanged(isOnline:)``).
    public var isOnline: Bool { online }

    /// The queue now: counts and bytes by status, the oldest unsent entry,
    /// the next retry time, and the dispatcher's own state.
    public func queueState() async throws(OutboxError) -> OutboxQueueState {
        let summary = try await store.summary()
        let idle = try await isIdleNow()
        let switches = switches.current
        return OutboxQueueState(
            summary: summary, isIdle: idle, isPaused: switches.paused, isOnline: switches.online,
            isStopped: switches.lifecycle == .stopped)
    }

    /// The queue's state now, then each time it changes (entries enqueued,
    /// sent, delivered, failed; the dispatcher paused, online or offline,
    /// busy or idle), for a pending-writes badge. States that change faster
    /// than the app reads them are coalesced: each read gets the latest.
    /// Ends when the iterating task is cancelled.
    public nonisolated func queueUpdates() -> OutboxQueueUpdates {
        OutboxQueueUpdates(dispatcher: self, changes: feed.subscribe())
    }

    /// Returns once the dispatcher is idle: nothing is being sent and
    /// nothing is due that it may send now (see ``OutboxQueueState/isIdle``).
    /// Entries may still wait for a retry time, for a dependency, for the
    /// network or for ``resume()``.
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled; a
    ///   store error.
    public nonisolated func waitUntilIdle() async throws {
        let changes = feed.subscribe()
        while try await !isIdleNow() {
            guard await changes.next() != nil else { throw CancellationError() }
        }
    }

    /// Waits, as Firestore's `waitForPendingWrites()` does, until every
    /// entry that is unsent now — pending, being sent, or waiting for a
    /// retry — has been delivered or set aside (quarantined, left in
    /// conflict, removed). Entries enqueued after the call are not waited
    /// for. It can wait long: offline, it waits until the network is back.
    ///
    /// - Returns: what became of those entries.
    /// - Throws: `CancellationError` if the waiting task is cancelled; a
    ///   store error.
    public nonisolated func waitForPendingWrites() async throws -> OutboxPendingWrites {
        let changes = feed.subscribe()
        var remaining = Set(try await store.ids(matching: OutboxFilter(statuses: [.pending, .inFlight, .waitingToRetry])))
        var result = OutboxPendingWrites()
        var check = remaining  // an entry may have settled between the read and now
        while true {
            for id in check where remaining.contains(id) {
                guard let settled = try await settlement(of: id) else { continue }
                remaining.remove(id)
                switch settled {
                case .success(let delivered): result.delivered.append(delivered)
                case .failure(let failure): result.notDelivered.append(failure)
                }
            }
            if remaining.isEmpty { return result }
            guard let changed = await changes.next() else { throw CancellationError() }
            check = changed
        }
    }

    /// How `id` ended, if it has: delivered, or set aside.
    private nonisolated func settlement(of id: OutboxEntry.ID) async throws(OutboxError) -> Result<OutboxEntry.ID, OutboxDeliveryFailure>? {
        guard let state = try await store.state(of: id) else {
            return .failure(OutboxDeliveryFailure(id: id, kind: .discarded, failure: nil))
        }
        switch state.status {
        case .succeeded: return .success(id)
        case .quarantined: return .failure(OutboxDeliveryFailure(id: id, kind: .quarantined, failure: state.lastFailure))
        case .conflict: return .failure(OutboxDeliveryFailure(id: id, kind: .conflict, failure: state.lastFailure))
        case .pending, .inFlight, .waitingToRetry: return nil
        }
    }

    /// Idle: no drain runs, no retry timer is due to fire, and — unless the
    /// dispatcher may not send now (paused, offline, stopped) — no entry
    /// is due.
    func isIdleNow() async throws(OutboxError) -> Bool {
        if running != nil { return false }
        let now = clock.now()
        if let timer, timer.deadline <= now { return false }
        guard switches.current.maySend else { return true }
        guard let due = try await store.nextDueDate() else { return true }
        // Re-check after the await: a drain may have started meanwhile.
        return running == nil && due > now
    }
}

/// The whole queue at one moment: what a pending-writes badge and a
/// "sync" indicator show.
public struct OutboxQueueState: Sendable, Hashable {
    /// Counts and bytes by status, the oldest unsent entry's creation time
    /// (``/OutboxModel/OutboxSummary/oldestUnsentAge(at:)``) and the next retry time.
    public var summary: OutboxSummary
    /// Nothing is being sent and nothing is due that the dispatcher may
    /// send now: entries left wait for a retry time, a dependency, the
    /// network or ``OutboxDispatcher/resume()``.
    public var isIdle: Bool
    public var isPaused: Bool
    public var isOnline: Bool
    /// After ``OutboxDispatcher/stop()``, until the next start.
    public var isStopped: Bool

    public init(summary: OutboxSummary, isIdle: Bool, isPaused: Bool, isOnline: Bool, isStopped: Bool) {
        self.summary = summary
        self.isIdle = isIdle
        self.isPaused = isPaused
        self.isOnline = isOnline
        self.isStopped = isStopped
    }
}

/// What ``OutboxDispatcher/waitForPendingWrites()`` saw become of the
/// entries that were unsent when it was called.
public struct OutboxPendingWrites: Sendable, Hashable {
    public var delivered: [OutboxEntry.ID] = []
    /// Quarantined, left in conflict, or removed without delivery.
    public var notDelivered: [OutboxDeliveryFailure] = []

    public init(delivered: [OutboxEntry.ID] = [], notDelivered: [OutboxDeliveryFailure] = []) {
        self.delivered = delivered
        self.notDelivered = notDelivered
    }
}

/// One entry's states: see ``OutboxDispatcher/updates(of:)``.
public struct OutboxEntryUpdates: AsyncSequence, Sendable {
    public typealias Element = OutboxEntryState
    let store: any OutboxStore
    let id: OutboxEntry.ID
    let changes: OutboxChanges

    public struct AsyncIterator: AsyncIteratorProtocol {
        let store: any OutboxStore
        let id: OutboxEntry.ID
        let changes: OutboxChanges
        var last: OutboxEntryState?
        var started = false
        var finished = false

        public mutating func next() async throws -> OutboxEntryState? {
            while !finished {
                if started {
                    guard await changes.next() != nil else { return nil }
                }
                started = true
                guard let state = try await store.state(of: id) else {
                    finished = true
                    return nil
                }
                if state.status == .succeeded { finished = true }
                if state != last {
                    last = state
                    return state
                }
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(store: store, id: id, changes: changes) }
}

/// The queue's states: see ``OutboxDispatcher/queueUpdates()``.
public struct OutboxQueueUpdates: AsyncSequence, Sendable {
    public typealias Element = OutboxQueueState
    let dispatcher: OutboxDispatcher
    let changes: OutboxChanges

    public struct AsyncIterator: AsyncIteratorProtocol {
        let dispatcher: OutboxDispatcher
        let changes: OutboxChanges
        var last: OutboxQueueState?

        public mutating func next() async throws -> OutboxQueueState? {
            while true {
                if last != nil {
                    guard await changes.next() != nil else { return nil }
                }
                let state = try await dispatcher.queueState()
                if state != last {
                    last = state
                    return state
                }
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(dispatcher: dispatcher, changes: changes) }
}
