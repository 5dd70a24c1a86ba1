import Foundation
import Logging
import Metrics
import OutboxLocking
import OutboxStorage
import OutboxModel

/// Drains an ``/OutboxStorage/OutboxStore`` to the server: routes each due entry to the
/// handler registered for its type, applies the outcome, and wakes itself up
/// when the next retry is due.
///
/// ```swift
/// let dispatcher = OutboxDispatcher(store: store, handlers: ["send_message": http])
/// await dispatcher.start(connectivity: NetworkPathMonitor())
/// try await dispatcher.enqueue(SendMessage(conversationID: "c1", body: "hi"))  // commit point
/// for await event in dispatcher.events() { … }                                  // optimistic UI, badge
/// ```
///
/// - `flush()` coalesces concurrent callers onto one running drain, so an
///   entry is never sent twice at once. A running drain keeps every slot
///   busy: it claims again when an attempt ends, when something is enqueued
///   or flushed, and when the next retry comes due.
/// - Lifecycle: `start` … `stop` … `start` again. While stopped, `enqueue`
///   records the write (the commit point still holds) and it is sent after
///   the next `start`.
/// - Triggers: `start()` (cold start), every `enqueue`, a timer at the
///   earliest retry time, `connectivityChanged(isOnline:)`,
///   `appDidBecomeActive()`, `resume()`.
/// - It has no feature-specific branches: an entry whose type has no
///   handler is left alone and reported (``/OutboxModel/OutboxEvent/unhandled(_:type:)``).
public actor OutboxDispatcher {
    /// The queue being drained.
    public nonisolated let store: any OutboxStore
    let handlers: [String: any OutboxHandler]
    let fallback: (any OutboxHandler)?
    let configuration: OutboxDispatcherConfiguration
    /// Why the configuration cannot be used (``OutboxDispatcherConfiguration/validate()``):
    /// the dispatcher then refuses to work.
    let configurationError: OutboxError?
    let clock: any OutboxClock
    /// Publishes this dispatcher's events into the feed.
    let eventPublisher: OutboxEventPublisher
    /// Where observers learn that entries or the dispatcher's own state
    /// changed: the store's feed, or (for a store without one) the
    /// dispatcher's, fed with its events.
    nonisolated let feed: OutboxChangeFeed
    /// Runs each attempt, off this actor.
    let attempts: DeliveryAttempts
    nonisolated var logger: Logger { configuration.logger }

    /// The running drain, if any: flushes join it, enqueues and flushes wake it.
    var running: (task: Task<OutboxFlushReport, Never>, wakeup: Wakeup)?
    var drainAgain = false
    /// Paused, online, the lifecycle and the claim deadline: one copy,
    /// shared with the drain loop, which runs off the actor. The properties
    /// below read and set it.
    let switches = DispatcherSwitches()
    var paused: Bool {
        get { switches.current.paused }
        set { switches.update { $0.paused = newValue } }
    }
    var online: Bool {
        get { switches.current.online }
        set { switches.update { $0.online = newValue } }
    }
    var lifecycle: DispatcherSwitches.Lifecycle {
        get { switches.current.lifecycle }
        set { switches.update { $0.lifecycle = newValue } }
    }
    /// While ``drain(until:)`` runs: no attempt starts after this.
    var claimDeadline: Date? {
        get { switches.current.claimDeadline }
        set { switches.update { $0.claimDeadline = newValue } }
    }
    var timer: (task: Task<Void, Never>, deadline: Date)?
    /// When the queue last moved, for the stall watch (`OutboxDispatcher+Stall.swift`).
    var stallWatch = StallWatch()
    /// The queue's snapshot while the dispatcher runs (`OutboxDispatcher+Snapshots.swift`).
    var snapshots: SnapshotPublishing?
    var monitorTask: Task<Void, Never>?
    var lastPrune: Date?
    var lastLeaseCheck: Date?
    /// What every drain did while ``drain(until:)`` runs.
    var deadlineReport: OutboxFlushReport?
    /// ``drain(until:)`` callers waiting for the next due time.
    var sleepers: [Wakeup] = []

    let metrics: DispatcherMetrics

    /// - Parameters:
    ///   - store: the queue to drain.
    ///   - handlers: the handler for each entry type.
    ///   - fallback: a handler for types not in `handlers` (a generic HTTP
    ///     handler, say); `nil` leaves such entries alone.
    ///   - configuration: pacing, timeouts and retries.
    ///   - clock: the time (a ``ManualOutboxClock`` in tests).
    public init(
        store: any OutboxStore, handlers: [String: any OutboxHandler], fallback: (any OutboxHandler)? = nil,
        configuration: OutboxDispatcherConfiguration = OutboxDispatcherConfiguration(),
        clock: any OutboxClock = SystemOutboxClock()
    ) {
        self.store = store
        self.handlers = handlers
        self.fallback = fallback
        self.configuration = configuration
        do {
            try configuration.validate()
            configurationError = nil
        } catch {
            configurationError = error
            configuration.logger.error("the dispatcher's configuration is invalid; it will send nothing", metadata: ["error": "\(error)"])
        }
        self.clock = clock
        let feed = store.changeFeed ?? OutboxChangeFeed(eventsAreChanges: true)
        self.feed = feed
        let events = feed.eventPublisher()
        let metrics = DispatcherMetrics(factory: configuration.metricsFactory)
        self.eventPublisher = events
        self.metrics = metrics
        self.attempts = DeliveryAttempts(
            store: store, configuration: configuration, clock: clock, events: events, metrics: metrics)
    }

    /// A dispatcher released without ``stop()`` leaves no timer asleep: its
    /// tasks (the retry timer, the snapshot ticker) would outlive it until
    /// their next time (on a manual clock, forever, holding the clock).
    deinit {
        timer?.task.cancel()
        monitorTask?.cancel()
        // The snapshot tasks too: the ticker would sleep on the clock, and
        // the follower wait on the store's feed, for as long as the store lives.
        snapshots?.ticker.cancel()
        snapshots?.follower.cancel()
        attempts.watchdog.shutdown()
    }

    // MARK: - The facade a feature uses

    /// Records `action` (the commit point), publishes ``/OutboxModel/OutboxEvent/enqueued(_:)``
    /// for optimistic UI, and starts a best-effort flush in the background:
    /// the seeds' "action → outbox.add → event → flush" in one call.
    ///
    /// `idempotencyKey`: `nil` (the default) derives the key from the
    /// partition and `id`; pass your own when a retry of this call cannot
    /// reproduce `id` (see ``/OutboxModel/OutboxEnqueueRequest/idempotencyKey``).
    @discardableResult
    public nonisolated func enqueue<Action: OutboxAction>(
        _ action: Action, id: OutboxEntry.ID = OutboxEntry.ID(), idempotencyKey: String? = nil
    ) async throws(OutboxError) -> OutboxEnqueueResult {
        let request: OutboxEnqueueRequest
        do {
            request = try OutboxEnqueueRequest(action, id: id, idempotencyKey: idempotencyKey, createdAt: clock.now())
        } catch {
            throw OutboxError(.invalidArgument, "the action's payload could not be encoded: \(error)", entry: id)
        }
        return try await enqueue(request)
    }

    /// Records a request built by hand; see ``enqueue(_:id:idempotencyKey:)``.
    ///
    /// Runs where its caller runs and enters the dispatcher once, after the
    /// store has recorded the entry, to start the flush: the store is not
    /// the dispatcher's state.
    @discardableResult
    public nonisolated func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        if let configurationError { throw configurationError }
        let result = try await store.enqueue(request)
        announceEnqueued(result)
        await afterEnqueue([request.id])
        return result
    }

    /// Publishes what an enqueue recorded.
    nonisolated func announceEnqueued(_ result: OutboxEnqueueResult) {
        switch result {
        case .enqueued(let entry), .coalesced(let entry, _):
            metrics.enqueued.increment()
            publish(.enqueued(entry))
            if entry.status == .quarantined {
                // Its parent is quarantined: it is quarantined with it (see
                // Scheduler), the entry saying which parent.
                metrics.quarantined.increment()
                if let failure = entry.lastFailure { publish(.quarantined(entry.id, failure: failure)) }
            }
        case .duplicate:
            break
        }
    }

    /// After an enqueue: flushes in the background, unless stopped.
    func afterEnqueue(_ ids: [OutboxEntry.ID]) {
        if lifecycle == .stopped {
            logger.notice(
                "recorded while the dispatcher is stopped: it is sent after the next start()",
                metadata: ["ids": "\(ids.prefix(10))"])
        } else {
            poke()
        }
    }

    /// A stream of everything that happens to entries, from now on. Each
    /// call returns its own stream.
    public nonisolated func events() -> AsyncStream<OutboxEvent> { eventPublisher.stream() }

    /// Counts and bytes by status, for a pending-writes badge.
    public func summary() async throws(OutboxError) -> OutboxSummary { try await store.summary() }

    /// Sends an entry again: a quarantined (or conflicting) one goes back
    /// in the queue with fresh attempts and its dependents; one waiting for
    /// its retry time ("send now") becomes due at once, its attempts kept.
    /// Then flushes.
    ///
    /// - Throws: ``/OutboxModel/OutboxError/Code/notFound`` for an unknown id,
    ///   ``/OutboxModel/OutboxError/Code/invalidTransition`` for an entry being sent,
    ///   delivered, or whose dependency cannot be delivered.
    public func retry(_ id: OutboxEntry.ID) async throws(OutboxError) {
        switch try await store.state(of: id)?.status {
        case .waitingToRetry?: _ = try await store.bringForward([id], at: clock.now())
        case .pending?: break  // due already
        default: _ = try await store.retry(id, at: clock.now())
        }
        noteProgress()
        poke()
    }

    /// Records that the server applied an entry left in `conflict` for the
    /// app — one whose answer was lost and whose key the server may have
    /// forgotten, say — with the id the app found for it there (`nil` if it
    /// has none). It is delivered from then on: its `local:` reference maps
    /// to `serverID`, and its dependents may go. The alternative is
    /// ``retry(_:)``, which resends it with the same key.
    ///
    /// - Throws: ``/OutboxModel/OutboxError/Code/notFound`` for an unknown id,
    ///   ``/OutboxModel/OutboxError/Code/invalidTransition`` for an entry not in `conflict`.
    public func markDelivered(_ id: OutboxEntry.ID, serverID: String?) async throws(OutboxError) {
        guard let entry = try await store.entry(id) else { throw OutboxError(.notFound, "no such entry", entry: id) }
        guard entry.status == .conflict else {
            throw OutboxError(
                .invalidTransition, "only an entry left in conflict can be marked delivered; this one is \(entry.status)",
                entry: id)
        }
        try await store.recordSuccess(id, serverID: serverID, at: clock.now())
        metrics.delivered.increment()
        publish(.delivered(id, serverID: serverID))
        noteProgress()
        if lifecycle != .stopped { poke() }  // its dependents may go now
    }

    /// Removes an entry that is not being sent; its dependents are quarantined.
    public func discard(_ id: OutboxEntry.ID) async throws(OutboxError) {
        let cascade = try await store.discard(id)
        noteProgress()
        publish(.discarded(id, because: .byApp))
        for dependent in cascade.dependents {
            publish(.quarantined(dependent, failure: OutboxFailure(.dependency(cascade.causes[dependent] ?? .discarded(id)))))
        }
    }

    nonisolated func publish(_ event: @autoclosure () -> OutboxEvent) { eventPublisher.publish(event()) }
}
