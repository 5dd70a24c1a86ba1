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
    /// Where observers learn that entries or the dispatcher's own state
    /// changed: the store's feed, or (for a store without one) the
    /// dispatcher's, fed with its events.
    nonisolated let feed: OutboxChangeFeed
    /// Runs each attempt, off this actor.
    let attempts: DeliveryAttempts
    nonisolated var logger: Logger { configuration.logger }

    /// The running drain, if any: flushes join it, enqueues and flushes wake it.
    var running: (task: Task<OutboxFlushReport, Never>, wakeup: Wakeup)?
    private var drainAgain = false
    var paused = false { didSet { control.switches.withLock { [paused] in $0.paused = paused } } }
    var online = true { didSet { control.switches.withLock { [online] in $0.online = online } } }
    var lifecycle = Lifecycle.idle {
        didSet { control.switches.withLock { [stopped = lifecycle == .stopped] in $0.stopped = stopped } }
    }
    /// While ``drain(until:)`` runs: no attempt starts after this.
    private var claimDeadline: Date? {
        didSet { control.switches.withLock { [claimDeadline] in $0.claimDeadline = claimDeadline } }
    }
    /// The switches above, for the drain loop, which runs off the actor.
    let control = DrainControl()
    var timer: (task: Task<Void, Never>, deadline: Date)?
    private var monitorTask: Task<Void, Never>?
    private var lastPrune: Date?
    var lastLeaseCheck: Date?

    enum Lifecycle {
        /// Never started: every enqueue flushes in the background.
        case idle
        case started
        /// After ``stop()``: enqueues are recorded and sent after the next ``start(connectivity:)``.
        case stopped
    }

    private let metrics: DispatcherMetrics

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
        let feed = store.changeFeed ?? OutboxChangeFeed()
        self.feed = feed
        let broadcaster = EventBroadcaster(announcingTo: store.changeFeed == nil ? feed : nil)
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

    /// Records a request built by hand; see ``enqueue(_:id:idempotencyKey:)``.
    @discardableResult
    public func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        if let configurationError { throw configurationError }
        let result = try await store.enqueue(request)
        announceEnqueued(result)
        afterEnqueue([request.id])
        return result
    }

    /// Publishes what an enqueue recorded.
    func announceEnqueued(_ result: OutboxEnqueueResult) {
        switch result {
        case .enqueued(let entry), .coalesced(let entry, _):
            metrics.enqueued.increment()
            publish(.enqueued(entry))
            if entry.status == .quarantined {
                // Its parent is dead: it is quarantined with it (see Scheduler).
                metrics.quarantined.increment()
                publish(.quarantined(entry.id, reason: entry.lastError ?? "dependencyFailed"))
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
    public nonisolated func events() -> AsyncStream<OutboxEvent> { broadcaster.stream() }

    /// Counts and bytes by status, for a pending-writes badge.
    public func summary() async throws(OutboxError) -> OutboxSummary { try await store.summary() }

    /// Sends an entry again: a quarantined (or conflicting) one goes back
    /// in the queue with fresh attempts and its dependents; one waiting for
    /// its retry time ("send now") becomes due at once, its attempts kept.
    /// Then flushes.
    ///
    /// - Throws: ``OutboxError/Code/notFound`` for an unknown id,
    ///   ``OutboxError/Code/invalidTransition`` for an entry being sent,
    ///   delivered, or whose dependency cannot be delivered.
    public func retry(_ id: OutboxEntry.ID) async throws(OutboxError) {
        switch try await store.state(of: id)?.status {
        case .waitingToRetry?: _ = try await store.bringForward([id], at: clock.now())
        case .pending?: break  // due already
        default: _ = try await store.retry(id, at: clock.now())
        }
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
        for dependent in cascade.dependents { publish(.quarantined(dependent, reason: DependencyFailure.discarded(id).reason)) }
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
        defer { feed.publishQueueChange() }
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
        feed.publishQueueChange()
        if isOnline { Task { await self.backOnline() } }
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
        for sleeper in sleepers { sleeper.signal() }  // a drain(until:) waiting for a retry time ends
        if let running {
            running.task.cancel()
            _ = await valueUnlessCancelled(of: running.task)
        }
        broadcaster.finish()
        feed.publishQueueChange()
    }

    /// Connectivity changed: offline stops new attempts; online flushes.
    public func connectivityChanged(isOnline: Bool) {
        guard online != isOnline else { return }
        online = isOnline
        feed.publishQueueChange()
        logger.debug("connectivity changed", metadata: ["online": "\(isOnline)"])
        if isOnline { Task { await self.backOnline() } }
    }

    /// The app came to the foreground: a good time to retry.
    public func appDidBecomeActive() { poke() }

    /// Stops starting attempts (running ones finish) until ``resume()`` —
    /// whatever else happens meanwhile: enqueues, retry times, the network
    /// coming back, ``flush()``, ``drain(until:)`` and a ``stop()``/``start(connectivity:)``
    /// cycle all leave it paused. Enqueues are still recorded. ``isPaused``
    /// tells; ``queueUpdates()`` shows it.
    public func pause() {
        paused = true
        feed.publishQueueChange()
    }

    /// Resumes after ``pause()``: flushes, and the retry timer runs again.
    public func resume() {
        paused = false
        feed.publishQueueChange()
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
    /// the deadline comes: for a background task (`BGProcessingTask`, an
    /// Android-style worker) that has until `deadline`.
    ///
    /// It returns **before** the deadline: no attempt starts, and running
    /// attempts are cancelled (recorded as interrupted, resent later with the
    /// same key), ``OutboxDispatcherConfiguration/deadlineMargin`` before it —
    /// the margin is the time left to record their outcomes. If the calling
    /// task is cancelled (a background task's expiration handler), it does
    /// the same at once. Either way nothing is left in flight: every attempt
    /// it waited on has recorded its outcome when it returns. A handler that
    /// ignores cancellation is not waited for (its entry's next attempt
    /// waits for it instead).
    ///
    /// Entries that cannot be sent before the deadline (a retry due later,
    /// a dependency not delivered) stay queued; ``summary()``,
    /// ``queueState()`` and ``OutboxStore/entries(matching:)`` tell what is
    /// left and why. It also returns early when nothing left can come due by
    /// itself, and after ``stop()``.
    @discardableResult
    public func drain(until deadline: Date) async -> OutboxFlushReport {
        if let refused = refusedForConfiguration() { return refused }
        // The margin, but never more than a quarter of the time given: a
        // short drain (`outbox drain --timeout 1`) still sends.
        let given = max(0, deadline.timeIntervalSince(clock.now()))
        let cutoff = deadline.addingTimeInterval(-min(OutboxBackoff.seconds(configuration.deadlineMargin), given / 4))
        claimDeadline = cutoff
        // Every drain until then counts, whoever started it (a timer, an enqueue).
        deadlineReport = OutboxFlushReport()
        defer {
            claimDeadline = nil
            deadlineReport = nil
        }
        // At the cutoff, the running attempts are interrupted.
        let clock = self.clock
        let alarm = Task { [weak self] in
            do { try await clock.sleep(until: cutoff) } catch { return }
            await self?.interruptRunningDrain()
        }
        defer { alarm.cancel() }
        await withTaskCancellationHandler {
            await drainUntilDeadline(cutoff)
        } onCancel: {
            Task { await self.interruptRunningDrain() }
        }
        // Wait (even when cancelled: it is interrupted, so it ends promptly)
        // for the drain this call took part in, so nothing stays in flight.
        if let running, Task.isCancelled || clock.now() >= cutoff {
            running.task.cancel()
            _ = await running.task.value
        }
        return deadlineReport ?? OutboxFlushReport()
    }

    private func drainUntilDeadline(_ cutoff: Date) async {
        while !Task.isCancelled && lifecycle != .stopped {
            guard await valueUnlessCancelled(of: drainTask()) != nil else { break }
            let now = clock.now()
            guard now < cutoff, let unsent = try? await store.summary().unsent, unsent > 0 else { break }
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
            // Wait for the next retry (or the cutoff), woken early by an
            // enqueue or a flush: they start a drain of their own.
            let next = min(due, cutoff)
            if lifecycle == .stopped { break }  // stop() woke the sleepers before this one
            if next > now {
                if let running { _ = await valueUnlessCancelled(of: running.task) } else { await sleep(until: next) }
            }
            if clock.now() >= cutoff { break }
        }
    }

    /// Cancels the running drain's attempts (each is recorded as
    /// interrupted); the dispatcher's triggers start a new drain later.
    private func interruptRunningDrain() {
        running?.task.cancel()
        for sleeper in sleepers { sleeper.signal() }
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
        feed.publishQueueChange()
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
        feed.publishQueueChange()
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
        await removeExpiredDead(at: now)
        do { try await store.prune(at: now) } catch {
            publish(.storeFailed(nil, error: error))
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
