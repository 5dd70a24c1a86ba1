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
    private let handlers: [String: any OutboxHandler]
    private let fallback: (any OutboxHandler)?
    private let configuration: OutboxDispatcherConfiguration
    private let clock: any OutboxClock
    private let broadcaster: EventBroadcaster
    /// Runs each attempt, off this actor.
    private let attempts: DeliveryAttempts
    private var logger: Logger { configuration.logger }

    /// The running drain, if any: flushes join it, enqueues and flushes wake it.
    private var running: (task: Task<OutboxFlushReport, Never>, wakeup: Wakeup)?
    private var drainAgain = false
    private var paused = false
    private var online = true
    private var lifecycle = Lifecycle.idle
    /// While ``drain(until:)`` runs: no attempt starts after this.
    private var claimDeadline: Date?
    private var timer: (task: Task<Void, Never>, deadline: Date)?
    private var monitorTask: Task<Void, Never>?
    private var reportedUnhandled: Set<OutboxEntry.ID> = []
    private var lastPrune: Date?
    private var lastLeaseCheck: Date?

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
        self.clock = clock
        let broadcaster = EventBroadcaster()
        let metrics = DispatcherMetrics()
        self.broadcaster = broadcaster
        self.metrics = metrics
        self.attempts = DeliveryAttempts(
            store: store, configuration: configuration, clock: clock, broadcaster: broadcaster, metrics: metrics)
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
        if lifecycle == .stopped {
            logger.notice(
                "recorded while the dispatcher is stopped: it is sent after the next start()",
                metadata: ["id": "\(request.id)"])
        } else {
            Task { await self.flush() }
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
            _ = await Self.value(of: running.task)
        }
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
    /// Concurrent callers join the running drain instead of starting another
    /// (and wake it, so it claims what became due). If the calling task is
    /// cancelled, returns at once with what is known (an empty report when it
    /// joined a drain): the drain goes on for the dispatcher's other triggers.
    @discardableResult
    public func flush() async -> OutboxFlushReport {
        await Self.value(of: drainTask()) ?? OutboxFlushReport()
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
        claimDeadline = deadline
        // Every drain until then counts, whoever started it (a timer, an enqueue).
        deadlineReport = OutboxFlushReport()
        defer {
            claimDeadline = nil
            deadlineReport = nil
        }
        while !Task.isCancelled {
            guard await Self.value(of: drainTask()) != nil else { break }
            let now = clock.now()
            guard now < deadline, let unsent = try? await store.summary().unsent, unsent > 0 else { break }
            // Wait for the next retry (or the deadline), woken early by an
            // enqueue or a flush: they start a drain of their own.
            let next = min((try? await store.nextDueDate()) ?? deadline, deadline)
            if next > now {
                if let running { _ = await Self.value(of: running.task) } else { await sleep(until: next) }
            }
            if clock.now() >= deadline { break }
        }
        return deadlineReport ?? OutboxFlushReport()
    }

    /// What every drain did while ``drain(until:)`` runs.
    private var deadlineReport: OutboxFlushReport?

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
            report.add(await drain(wakeup: wakeup))
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
    private var mayClaim: Bool {
        !paused && online && lifecycle != .stopped && !Task.isCancelled
            && claimDeadline.map { clock.now() < $0 } ?? true
    }

    /// One pass: keeps up to `maximumConcurrentDeliveries` attempts running.
    /// It claims due entries whenever a slot is free and something may have
    /// become due — an attempt ended, an enqueue or a flush woke it, the next
    /// retry time came — and ends when nothing runs and nothing is due. A
    /// claim puts its entries in flight in one write, so an entry is never
    /// handed to two attempts. Cancelling the pass (``stop()``) cancels the
    /// running attempts; each still records its outcome.
    private func drain(wakeup: Wakeup) async -> OutboxFlushReport {
        var report = OutboxFlushReport()
        await reclaimExpiredLeases()
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
            var storeFailed = false
            var dueAlarm: (task: Task<Void, Never>, at: Date)?
            defer { dueAlarm?.task.cancel() }
            while true {
                while finished.count.withLock({ $0 }) > collected, let result = await group.next() {
                    running -= 1
                    collected += 1
                    report.add(result)
                }
                var claimedAny = false
                let claiming = !storeFailed && mayClaim
                let capacity = configuration.maximumConcurrentDeliveries - running
                if claiming && capacity > 0 {
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
                            claimedAny = true
                            group.addTask {
                                let result = await attempts.attempt(entry, with: handler)
                                finished.count.withLock { $0 += 1 }
                                wakeup.signal()
                                return result
                            }
                        }
                    } catch {
                        // Let the running attempts finish and record their outcomes.
                        storeFailed = true
                        report.errors.append("claimDue: \(error)")
                        logger.error("cannot claim due entries", metadata: ["error": "\(error)"])
                    }
                }
                if running == 0 && !claimedAny { break }
                guard claiming else {
                    // Nothing new starts: wait for the running attempts only.
                    if let result = await group.next() {
                        running -= 1
                        collected += 1
                        report.add(result)
                    }
                    continue
                }
                // Free slots: also wake when the next retry comes due.
                if running < configuration.maximumConcurrentDeliveries,
                    let next = try? await store.nextDueDate(), dueAlarm.map({ next < $0.at }) ?? true
                {
                    dueAlarm?.task.cancel()
                    let clock = self.clock
                    dueAlarm = (Task {
                        do { try await clock.sleep(until: next) } catch { return }
                        wakeup.signal()
                    }, next)
                }
                await wakeup.wait()
                if let alarm = dueAlarm, alarm.at <= clock.now() { dueAlarm = nil }
            }
        }
        return report
    }

    /// Puts entries whose lease expired back in the queue, at most once per
    /// `leaseGrace`: an attempt that could not record its outcome (its store
    /// write failed) does not hold its entry until the next open.
    private func reclaimExpiredLeases() async {
        let now = clock.now()
        if let lastLeaseCheck, now < lastLeaseCheck.adding(configuration.leaseGrace) { return }
        lastLeaseCheck = now
        do {
            let reclaimed = try await store.reclaimExpiredLeases(at: now)
            if !reclaimed.isEmpty {
                logger.warning(
                    "reclaimed entries whose attempt never recorded an outcome",
                    metadata: ["count": "\(reclaimed.count)", "ids": "\(reclaimed.prefix(10))"])
            }
        } catch {
            logger.error("cannot reclaim expired leases", metadata: ["error": "\(error)"])
        }
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

    private nonisolated func publish(_ event: OutboxEvent) { broadcaster.publish(event) }

    /// The value of `task`, or `nil` as soon as the calling task is
    /// cancelled (the task itself goes on).
    private static func value<Value: Sendable>(of task: Task<Value, Never>) async -> Value? {
        let waiter = Locked<CheckedContinuation<Value?, Never>?>(nil)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiter.withLock { $0 = continuation }
                if Task.isCancelled { waiter.withLock { $0.take() }?.resume(returning: nil) }
                Task {
                    let value = await task.value
                    waiter.withLock { $0.take() }?.resume(returning: value)
                }
            }
        } onCancel: {
            waiter.withLock { $0.take() }?.resume(returning: nil)
        }
    }
}

/// A wake-up call that is never lost: ``signal()`` before ``wait()`` makes
/// the next wait return at once; many signals before a wait count as one.
/// One waiter at a time.
final class Wakeup: Sendable {
    private let state = Locked<(signalled: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at the next signal (at once if one came since the last wait).
    func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.signalled {
                    state.signalled = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// How many attempts of a drain have ended (shared with the attempt tasks).
private final class FinishedAttempts: Sendable {
    let count = Locked(0)
}
