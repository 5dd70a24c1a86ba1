import Foundation
import Logging
import Metrics
import OutboxLocking

/// Drains an ``OutboxStore`` to the server: routes each due entry to the
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
///   entry is never sent twice at once.
/// - Triggers: `start()` (cold start), every `enqueue`, a timer at the
///   earliest retry time, `connectivityChanged(isOnline:)`,
///   `appDidBecomeActive()`, `resume()`.
/// - It has no feature-specific branches: an entry whose type has no
///   handler is left alone and reported (``OutboxEvent/unhandled(_:type:)``).
public actor OutboxDispatcher {
    /// The queue being drained.
    public nonisolated let store: any OutboxStore
    private let handlers: [String: any OutboxHandler]
    private let fallback: (any OutboxHandler)?
    private let configuration: OutboxDispatcherConfiguration
    private let clock: any OutboxClock
    private let broadcaster: EventBroadcaster
    /// Runs each attempt, off this actor.
    private let attempts: DeliveryAttempts
    private var logger: Logger { configuration.logger }

    private var drainTask: Task<OutboxFlushReport, Never>?
    private var drainAgain = false
    private var paused = false
    private var online = true
    private var started = false
    private var timer: (task: Task<Void, Never>, deadline: Date)?
    private var monitorTask: Task<Void, Never>?
    private var reportedUnhandled: Set<OutboxEntry.ID> = []
    private var lastPrune: Date?

    private let metrics: DispatcherMetrics

    /// - Parameters:
    ///   - handlers: the handler for each entry type.
    ///   - fallback: a handler for types not in `handlers` (a generic HTTP
    ///     handler, say); `nil` leaves such entries alone.
    public init(
        store: any OutboxStore, handlers: [String: any OutboxHandler], fallback: (any OutboxHandler)? = nil,
        configuration: OutboxDispatcherConfiguration = OutboxDispatcherConfiguration(),
        clock: any OutboxClock = SystemOutboxClock()
    ) {
        self.store = store
        self.handlers = handlers
        self.fallback = fallback
        self.configuration = configuration
        self.clock = clock
        let broadcaster = EventBroadcaster()
        let metrics = DispatcherMetrics()
        self.broadcaster = broadcaster
        self.metrics = metrics
        self.attempts = DeliveryAttempts(
            store: store, configuration: configuration, clock: clock, broadcaster: broadcaster, metrics: metrics)
    }

    /// A dispatcher released without ``stop()`` leaves no timer asleep: its
    /// task would outlive it until the retry time (on a manual clock,
    /// forever, holding the clock).
    deinit {
        timer?.task.cancel()
        monitorTask?.cancel()
    }

    // MARK: - The facade a feature uses

    /// Records `action` (the commit point), publishes ``OutboxEvent/enqueued(_:)``
    /// for optimistic UI, and starts a best-effort flush in the background:
    /// the seeds' "action → outbox.add → event → flush" in one call.
    @discardableResult
    public func enqueue<Action: OutboxAction>(
        _ action: Action, id: OutboxEntry.ID = OutboxEntry.ID()
    ) async throws(OutboxError) -> OutboxEnqueueResult {
        let request: OutboxEnqueueRequest
        do { request = try OutboxEnqueueRequest(action, id: id, createdAt: clock.now()) } catch {
            throw OutboxError(.invalidArgument, "the action's payload could not be encoded: \(error)", entry: id)
        }
        return try await enqueue(request)
    }

    /// Records a request built by hand; see ``enqueue(_:id:)``.
    @discardableResult
    public func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        let result = try await store.enqueue(request)
        switch result {
        case .enqueued(let entry), .coalesced(let entry, _):
            metrics.enqueued.increment()
            publish(.enqueued(entry))
            if entry.status == .dead {
                // Its parent is dead: it is quarantined with it (see Scheduler).
                metrics.quarantined.increment()
                publish(.quarantined(entry.id, reason: entry.lastError ?? "dependencyFailed"))
            }
        case .duplicate:
            break
        }
        Task { await self.flush() }
        return result
    }

    /// A stream of everything that happens to entries, from now on. Each
    /// call returns its own stream.
    public nonisolated func events() -> AsyncStream<OutboxEvent> { broadcaster.stream() }

    /// Counts and bytes by status, for a pending-writes badge.
    public func summary() async throws(OutboxError) -> OutboxSummary { try await store.summary() }

    /// Puts a quarantined (or conflicting) entry back in the queue, with its
    /// dependents, and flushes.
    public func retry(_ id: OutboxEntry.ID) async throws(OutboxError) {
        _ = try await store.retry(id, at: clock.now())
        Task { await self.flush() }
    }

    /// Removes an entry that is not being sent; its dependents are quarantined.
    public func discard(_ id: OutboxEntry.ID) async throws(OutboxError) {
        let cascade = try await store.discard(id)
        publish(.discarded(id, reason: "discarded by the app"))
        for dependent in cascade.dependents { publish(.quarantined(dependent, reason: "dependencyFailed: \(id) was discarded")) }
    }

    // MARK: - Triggers

    /// Flushes now (the cold-start trigger) and follows `connectivity`.
    ///
    /// With a monitor, the cold-start flush waits for its first answer (the
    /// current state), so nothing is attempted while the device is offline.
    public func start(connectivity: (any ConnectivityMonitor)? = nil) {
        guard !started else { return }
        started = true
        guard let connectivity else {
            Task { await self.flush() }
            return
        }
        online = false  // until the monitor says otherwise
        monitorTask = Task { [weak self] in
            var first = true
            for await isOnline in connectivity.updates() {
                if first {
                    first = false
                    await self?.coldStart(isOnline: isOnline)
                } else {
                    await self?.connectivityChanged(isOnline: isOnline)
                }
            }
        }
    }

    private func coldStart(isOnline: Bool) {
        online = isOnline
        if isOnline { Task { await self.flush() } }
    }

    /// Stops the timer and the connectivity subscription, waits for a
    /// running drain, and ends every event stream.
    public func stop() async {
        monitorTask?.cancel()
        monitorTask = nil
        timer?.task.cancel()
        timer = nil
        paused = true
        if let drainTask { _ = await drainTask.value }
        broadcaster.finish()
    }

    /// Connectivity changed: offline stops new attempts; online flushes.
    public func connectivityChanged(isOnline: Bool) {
        guard online != isOnline else { return }
        online = isOnline
        logger.debug("connectivity changed", metadata: ["online": "\(isOnline)"])
        if isOnline { Task { await self.flush() } }
    }

    /// The app came to the foreground: a good time to retry.
    public func appDidBecomeActive() { Task { await self.flush() } }

    /// Stops starting attempts (running ones finish) until ``resume()``.
    public func pause() { paused = true }

    /// Resumes after ``pause()`` and flushes.
    public func resume() {
        paused = false
        Task { await self.flush() }
    }

    // MARK: - Flushing

    /// Sends everything that is due, until nothing is; returns what it did.
    /// Concurrent callers join the running drain instead of starting another.
    @discardableResult
    public func flush() async -> OutboxFlushReport {
        if let drainTask {
            drainAgain = true
            return await drainTask.value
        }
        let task = Task { await self.drainUntilQuiet() }
        drainTask = task
        return await task.value
    }

    private func drainUntilQuiet() async -> OutboxFlushReport {
        var report = OutboxFlushReport()
        repeat {
            drainAgain = false
            report.add(await drain())
        } while drainAgain && !paused && online
        // No await between the last check and this: a flush that arrives
        // later starts a new drain rather than joining a finished one.
        drainTask = nil
        await pruneIfDue()
        await scheduleTimer()
        return report
    }

    /// One pass: keeps up to `maximumConcurrentDeliveries` attempts running,
    /// claiming due entries from the store whenever slots free up. A claim
    /// puts its entries in flight in one write, so an entry is never handed
    /// to two attempts.
    private func drain() async -> OutboxFlushReport {
        var report = OutboxFlushReport()
        let lease = configuration.deliveryTimeout + configuration.leaseGrace
        let handlers = self.handlers
        let hasFallback = fallback != nil
        let attempts = self.attempts
        // Attempts count themselves here as they end, so the loop can take
        // every finished one at once and refill all their slots in one claim.
        let finished = FinishedAttempts()
        await withTaskGroup(of: OutboxFlushReport.self) { group in
            var running = 0
            var collected = 0
            var claiming = true
            while true {
                let capacity = configuration.maximumConcurrentDeliveries - running
                if claiming && capacity > 0 && !paused && online {
                    do {
                        let claim = try await store.claimDue(at: clock.now(), limit: capacity, lease: lease) { type in
                            hasFallback || handlers[type] != nil
                        }
                        for (id, type) in claim.unaccepted where reportedUnhandled.insert(id).inserted {
                            report.unhandled += 1
                            publish(.unhandled(id, type: type))
                            logger.warning("no handler for entry type", metadata: ["type": "\(type)", "id": "\(id)"])
                        }
                        for entry in claim.entries {
                            guard let handler = handlers[entry.type] ?? fallback else { continue }  // accepted above
                            running += 1
                            group.addTask {
                                let result = await attempts.attempt(entry, with: handler)
                                finished.count.withLock { $0 += 1 }
                                return result
                            }
                        }
                    } catch {
                        // Let the running attempts finish and record their outcomes.
                        claiming = false
                        report.errors.append("claimDue: \(error)")
                        logger.error("cannot claim due entries", metadata: ["error": "\(error)"])
                    }
                }
                guard running > 0, let result = await group.next() else { break }
                running -= 1
                collected += 1
                report.add(result)
                while running > 0, finished.count.withLock { $0 } > collected, let result = await group.next() {
                    running -= 1
                    collected += 1
                    report.add(result)
                }
            }
        }
        return report
    }

    /// Drops succeeded entries past their audit window and stale mappings,
    /// at most once per `pruneInterval`.
    private func pruneIfDue() async {
        let now = clock.now()
        if let lastPrune, now < lastPrune.adding(configuration.pruneInterval) { return }
        lastPrune = now
        do { try await store.prune(at: now) } catch {
            logger.error("cannot prune the outbox", metadata: ["error": "\(error)"])
        }
    }

    private func scheduleTimer() async {
        guard !paused, online, let next = try? await store.nextDueDate() else { return }
        if let timer, timer.deadline <= next { return }
        timer?.task.cancel()
        let clock = self.clock
        let task = Task { [weak self] in
            do { try await clock.sleep(until: next) } catch { return }
            await self?.timerFired()
        }
        timer = (task, next)
    }

    private func timerFired() async {
        timer = nil
        await flush()
    }

    private nonisolated func publish(_ event: OutboxEvent) { broadcaster.publish(event) }
}

/// How many attempts of a drain have ended (shared with the attempt tasks).
private final class FinishedAttempts: Sendable {
    let count = Locked(0)
}
