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
///   handler is left alone and reported (``OutboxEvent/unhandled(_:type:)``).
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
    private let broadcaster: EventBroadcaster
    /// Runs each attempt, off this actor.
    let attempts: DeliveryAttempts
    nonisolated var logger: Logger { configuration.logger }

    /// The running drain, if any: flushes join it, enqueues and flushes wake it.
    private var running: (task: Task<OutboxFlushReport, Never>, wakeup: Wakeup)?
    private var drainAgain = false
    private var paused = false { didSet { control.switches.withLock { [paused] in $0.paused = paused } } }
    private var online = true { didSet { control.switches.withLock { [online] in $0.online = online } } }
    private var lifecycle = Lifecycle.idle {
        didSet { control.switches.withLock { [stopped = lifecycle == .stopped] in $0.stopped = stopped } }
    }
    /// While ``drain(until:)`` runs: no attempt starts after this.
    private var claimDeadline: Date? {
        didSet { control.switches.withLock { [claimDeadline] in $0.claimDeadline = claimDeadline } }
    }
    /// The switches above, for the drain loop, which runs off the actor.
    let control = DrainControl()
    private var timer: (task: Task<Void, Never>, deadline: Date)?
    private var monitorTask: Task<Void, Never>?
    private var lastPrune: Date?
    var lastLeaseCheck: Date?

    private enum Lifecycle {
        /// Never started: every enqueue flushes in the background.
        case idle
        case started
        /// After ``stop()``: enqueues are recorded and sent after the next ``start(connectivity:)``.
        case stopped
    }

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
        do {
            try configuration.validate()
            configurationError = nil
        } catch {
            configurationError = error
            configuration.logger.error("the dispatcher's configuration is invalid; it will send nothing", metadata: ["error": "\(error)"])
        }
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
        attempts.watchdog.shutdown()
    }

    // MARK: - The facade a feature uses

    /// Records `action` (the commit point), publishes ``OutboxEvent/enqueued(_:)``
    /// for optimistic UI, and starts a best-effort flush in the background:
    /// the seeds' "action → outbox.add → event → flush" in one call.
    ///
    /// `idempotencyKey`: `nil` (the default) derives the key from the
    /// partition and `id`; pass your own when a retry of this call cannot
    /// reproduce `id` (see ``OutboxEnqueueRequest/idempotencyKey``).
    @discardableResult
    public func enqueue<Action: OutboxAction>(
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

    /// Records a request built by hand; see ``enqueue(_:id:)``.
    @discardableResult
    public func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        if let configurationError { throw configurationError }
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
        if lifecycle == .stopped {
            logger.notice(
                "recorded while the dispatcher is stopped: it is sent after the next start()",
                metadata: ["id": "\(request.id)"])
        } else {
            poke()
        }
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
        poke()
    }

    /// Records that the server applied an entry left in `conflict` for the
    /// app — one whose answer was lost and whose key the server may have
    /// forgotten, say — with the id the app found for it there (`nil` if it
    /// has none). It is delivered from then on: its `local:` reference maps
    /// to `serverID`, and its dependents may go. The alternative is
    /// ``retry(_:)``, which resends it with the same key.
    ///
    /// - Throws: ``OutboxError/Code/notFound`` for an unknown id,
    ///   ``OutboxError/Code/invalidTransition`` for an entry not in `conflict`.
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
        if lifecycle != .stopped { poke() }  // its dependents may go now
    }

    /// Removes an entry that is not being sent; its dependents are quarantined.
    public func discard(_ id: OutboxEntry.ID) async throws(OutboxError) {
        let cascade = try await store.discard(id)
        publish(.discarded(id, reason: "discarded by the app"))
        for dependent in cascade.dependents { publish(.quarantined(dependent, reason: "dependencyFailed: \(id) was discarded")) }
    }

    // MARK: - Triggers

    /// Flushes now (the cold-start trigger) and follows `connectivity`.
    /// After ``stop()``, starts again (and sends what was recorded meanwhile).
    ///
    /// With a monitor, the cold-start flush waits for its first answer (the
    /// current state), so nothing is attempted while the device is offline.
    public func start(connectivity: (any ConnectivityMonitor)? = nil) {
        guard lifecycle != .started else { return }
        lifecycle = .started
        paused = false
        guard let connectivity else {
            online = true
            poke()
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
        if isOnline { poke() }
    }

    /// Stops: no new attempt starts, running attempts are cancelled (each
    /// is recorded as interrupted and resent later with the same key), the
    /// timer and the connectivity subscription end, and so does every event
    /// stream. Returns once the running drain has recorded its attempts, or
    /// at once if the calling task is cancelled. ``start(connectivity:)``
    /// starts again.
    public func stop() async {
        lifecycle = .stopped
        monitorTask?.cancel()
        monitorTask = nil
        timer?.task.cancel()
        timer = nil
        if let running {
            running.task.cancel()
            _ = await valueUnlessCancelled(of: running.task)
        }
        broadcaster.finish()
    }

    /// Connectivity changed: offline stops new attempts; online flushes.
    public func connectivityChanged(isOnline: Bool) {
        guard online != isOnline else { return }
        online = isOnline
        logger.debug("connectivity changed", metadata: ["online": "\(isOnline)"])
        if isOnline { poke() }
    }

    /// The app came to the foreground: a good time to retry.
    public func appDidBecomeActive() { poke() }

    /// Stops starting attempts (running ones finish) until ``resume()``.
    public func pause() { paused = true }

    /// Resumes after ``pause()`` and flushes.
    public func resume() {
        paused = false
        poke()
    }

    // MARK: - Flushing

    /// Sends everything that is due, until nothing is; returns what it did.
    /// Concurrent callers join the running drain instead of starting another
    /// (and wake it, so it claims what became due). If the calling task is
    /// cancelled, returns at once with what is known (an empty report when it
    /// joined a drain): the drain goes on for the dispatcher's other triggers.
    @discardableResult
    public func flush() async -> OutboxFlushReport {
        if let refused = refusedForConfiguration() { return refused }
        return await valueUnlessCancelled(of: drainTask()) ?? OutboxFlushReport()
    }

    /// Sends what is due and keeps going — waiting for retries to come due,
    /// sending what is enqueued meanwhile — until nothing is left unsent or
    /// `deadline` passes. No attempt starts after the deadline; attempts
    /// running then end within ``OutboxDispatcherConfiguration/deliveryTimeout``
    /// (each is recorded: no entry stays in flight), so this returns within
    /// the deadline plus one delivery timeout — or at once if the calling
    /// task is cancelled.
    ///
    /// Entries that cannot be sent before the deadline (a retry due later,
    /// a dependency not delivered) stay queued; ``summary()`` and
    /// ``OutboxStore/entries(matching:)`` tell what is left and why.
    @discardableResult
    public func drain(until deadline: Date) async -> OutboxFlushReport {
        if let refused = refusedForConfiguration() { return refused }
        claimDeadline = deadline
        // Every drain until then counts, whoever started it (a timer, an enqueue).
        deadlineReport = OutboxFlushReport()
        defer {
            claimDeadline = nil
            deadlineReport = nil
        }
        while !Task.isCancelled {
            guard await valueUnlessCancelled(of: drainTask()) != nil else { break }
            let now = clock.now()
            guard now < deadline, let unsent = try? await store.summary().unsent, unsent > 0 else { break }
            guard let due = try? await store.nextDueDate() else {
                // In flight: a drain another caller started (the retry
                // timer, an enqueue) holds it; its outcome decides what
                // comes next.
                if let running {
                    _ = await valueUnlessCancelled(of: running.task)
                    continue
                }
                // Nothing will come due by itself (what is left waits for a
                // dependency that needs a person, say): waiting cannot help.
                break
            }
            // Wait for the next retry (or the deadline), woken early by an
            // enqueue or a flush: they start a drain of their own.
            let next = min(due, deadline)
            if next > now {
                if let running { _ = await valueUnlessCancelled(of: running.task) } else { await sleep(until: next) }
            }
            if clock.now() >= deadline { break }
        }
        return deadlineReport ?? OutboxFlushReport()
    }

    /// What every drain did while ``drain(until:)`` runs.
    private var deadlineReport: OutboxFlushReport?

    /// A report of the configuration error, when there is one: a dispatcher
    /// with an unusable configuration sends nothing.
    private func refusedForConfiguration() -> OutboxFlushReport? {
        guard let configurationError else { return nil }
        var report = OutboxFlushReport()
        report.errors.append("\(configurationError)")
        return report
    }

    /// A flush in the background that nobody waits for (every enqueue,
    /// retry, resume…): wakes the running drain, or starts one. No task
    /// of its own.
    private func poke() {
        guard configurationError == nil else { return }
        _ = drainTask()
    }

    /// The running drain, or a new one.
    private func drainTask() -> Task<OutboxFlushReport, Never> {
        if let running {
            drainAgain = true
            running.wakeup.signal()
            return running.task
        }
        let wakeup = Wakeup()
        let task = Task { await self.drainUntilQuiet(wakeup: wakeup) }
        running = (task, wakeup)
        return task
    }

    /// Sleeps on the dispatcher's clock until `date`, the calling task's
    /// cancellation, or a drain started meanwhile (an enqueue, a flush).
    private func sleep(until date: Date) async {
        let wakeup = Wakeup()
        sleepers.append(wakeup)
        let clock = self.clock
        let alarm = Task {
            try? await clock.sleep(until: date)
            wakeup.signal()
        }
        await wakeup.wait()
        alarm.cancel()
        sleepers.removeAll { $0 === wakeup }
    }

    /// ``drain(until:)`` callers waiting for the next due time.
    private var sleepers: [Wakeup] = []

    private func drainUntilQuiet(wakeup: Wakeup) async -> OutboxFlushReport {
        var report = OutboxFlushReport()
        repeat {
            drainAgain = false
            await reclaimExpiredLeases()
            report.add(await drainPass(wakeup: wakeup))
        } while drainAgain && mayClaim
        // No await between the last check and this: a flush that arrives
        // later starts a new drain rather than joining a finished one.
        running = nil
        deadlineReport?.add(report)
        for sleeper in sleepers { sleeper.signal() }
        await pruneIfDue()
        await scheduleTimer()
        return report
    }

    /// Whether a drain may start attempts now.
    var mayClaim: Bool {
        !paused && online && lifecycle != .stopped && !Task.isCancelled
            && claimDeadline.map { clock.now() < $0 } ?? true
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
        guard !paused, online, lifecycle != .stopped, let next = try? await store.nextDueDate() else { return }
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

    nonisolated func publish(_ event: @autoclosure () -> OutboxEvent) { broadcaster.publish(event()) }
}
