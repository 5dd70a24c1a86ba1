import Foundation
import Logging
import Metrics
import Synchronization

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
    private var random: JitterRandom
    private let broadcaster = EventBroadcaster()
    private var logger: Logger { configuration.logger }

    private var drainTask: Task<OutboxFlushReport, Never>?
    private var drainAgain = false
    private var paused = false
    private var online = true
    private var started = false
    private var timer: (task: Task<Void, Never>, deadline: Date)?
    private var monitorTask: Task<Void, Never>?
    private var reportedUnhandled: Set<OutboxEntry.ID> = []
    /// Handlers the watchdog gave up on that may still be running (they
    /// ignore cancellation), by entry: the next attempt waits for them, so
    /// an entry is never sent twice at once.
    private var abandonedDeliveries: [OutboxEntry.ID: Task<Void, Never>] = [:]
    private var lastPrune: Date?

    private let metrics = DispatcherMetrics()

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
        self.random = JitterRandom(seed: configuration.randomSeed)
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
    public func start(connectivity: (any ConnectivityMonitor)? = nil) {
        guard !started else { return }
        started = true
        if let connectivity {
            monitorTask = Task { [weak self] in
                for await isOnline in connectivity.updates() {
                    await self?.connectivityChanged(isOnline: isOnline)
                }
            }
        }
        Task { await self.flush() }
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
                                let result = await self.attempt(entry, with: handler)
                                finished.count.add(1, ordering: .releasing)
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
                while running > 0, finished.count.load(ordering: .acquiring) > collected, let result = await group.next() {
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

    // MARK: - One attempt

    /// Delivers one claimed (in-flight) entry and records the outcome.
    private func attempt(_ entry: OutboxEntry, with handler: any OutboxHandler) async -> OutboxFlushReport {
        var report = OutboxFlushReport()
        do throws(OutboxError) {
            // Too old to keep trying: quarantine, never drop silently.
            if let maximumAge = configuration.maximumAge, clock.now() >= entry.createdAt.adding(maximumAge) {
                try await quarantine(entry.id, reason: "expired: older than \(maximumAge)", httpStatus: nil, into: &report)
                return report
            }
            if let stillRunning = await previousDeliveryStillRunning(entry.id) {
                try await apply(stillRunning, to: entry, delivery: nil, handler: handler, into: &report)
                return report
            }
            publish(.sending(entry.id, attempt: entry.attempts))

            let outcome: OutboxOutcome
            var sent: OutboxDelivery?
            switch try await resolveReferences(entry) {
            case .unresolved(let unresolved):
                outcome = unresolved
            case .resolved(let delivery):
                let started = ContinuousClock.now
                outcome = await deliver(delivery, with: handler)
                metrics.deliveryTime.record(duration: started.duration(to: .now))
                sent = delivery
            }
            try await apply(outcome, to: entry, delivery: sent, handler: handler, into: &report)
        } catch {
            report.errors.append("\(entry.id): \(error)")
            logger.error("attempt failed in the store", metadata: ["id": "\(entry.id)", "error": "\(error)"])
        }
        return report
    }

    /// The entry with its `local:` references replaced by server ids, or the
    /// outcome to record if one cannot be resolved.
    private enum Resolution {
        case resolved(OutboxDelivery)
        case unresolved(OutboxOutcome)
    }

    private func resolveReferences(_ entry: OutboxEntry) async throws(OutboxError) -> Resolution {
        var mapping: [OutboxEntry.ID: String] = [:]
        for reference in LocalReferenceRemapper.references(endpoint: entry.endpoint, payload: entry.payload) {
            if let completion = try await store.completion(of: reference) {
                guard let serverID = completion.serverID else {
                    return .unresolved(
                        .permanent(reason: "\(reference.localReference) was delivered without a server id", httpStatus: nil))
                }
                mapping[reference] = serverID
            } else if try await store.entry(reference) != nil {
                return .unresolved(
                    .transient(reason: "waiting for \(reference.localReference) to be delivered (declare it as a dependency)", httpStatus: nil, retryAfter: nil))
            } else {
                return .unresolved(.permanent(reason: "unknown local reference \(reference.localReference)", httpStatus: nil))
            }
        }
        let remapped = LocalReferenceRemapper.remap(endpoint: entry.endpoint, payload: entry.payload) { mapping[$0] }
        for (local, server) in mapping { publish(.remapped(entry.id, local: local, serverID: server)) }
        return .resolved(OutboxDelivery(entry: entry, endpoint: remapped.endpoint, payload: remapped.payload, attempt: entry.attempts))
    }

    /// Runs the handler with a timeout; a timeout or a thrown error is transient.
    private func deliver(_ delivery: OutboxDelivery, with handler: any OutboxHandler) async -> OutboxOutcome {
        let deadline = clock.now().adding(configuration.deliveryTimeout)
        let result = await DeadlineRace.run(until: deadline, clock: clock) { try await handler.deliver(delivery) }
        switch result {
        case .finished(.success(let outcome)): return outcome
        case .finished(.failure(let error)):
            return .transient(reason: "the handler threw: \(error)", httpStatus: nil, retryAfter: nil)
        case .timedOut(let abandoned):
            remember(abandoned, for: delivery.entry.id)
            return .transient(reason: "timed out after \(configuration.deliveryTimeout)", httpStatus: nil, retryAfter: nil)
        }
    }

    /// Keeps a handler that outlived its timeout until it really ends.
    private func remember(_ abandoned: Task<Void, Never>, for id: OutboxEntry.ID) {
        abandonedDeliveries[id] = abandoned
        Task {
            await abandoned.value
            await self.forget(abandoned, for: id)
        }
    }

    private func forget(_ abandoned: Task<Void, Never>, for id: OutboxEntry.ID) {
        if abandonedDeliveries[id] == abandoned { abandonedDeliveries[id] = nil }
    }

    /// If an earlier attempt's handler still runs, waits for it (up to the
    /// delivery timeout); the outcome to record instead of sending if it
    /// outlasts that too.
    private func previousDeliveryStillRunning(_ id: OutboxEntry.ID) async -> OutboxOutcome? {
        guard let previous = abandonedDeliveries[id] else { return nil }
        let deadline = clock.now().adding(configuration.deliveryTimeout)
        if case .finished = await DeadlineRace.run(until: deadline, clock: clock, { await previous.value }) { return nil }
        return .transient(
            reason: "not sent: the handler of an earlier attempt is still running (it ignores cancellation)",
            httpStatus: nil, retryAfter: nil)
    }

    /// Records `outcome` of an attempt on `entry`; `delivery` is what was
    /// sent (references remapped), if anything was.
    private func apply(
        _ outcome: OutboxOutcome, to entry: OutboxEntry, delivery: OutboxDelivery?, handler: any OutboxHandler,
        into report: inout OutboxFlushReport
    ) async throws(OutboxError) {
        switch outcome {
        case .delivered(let serverID):
            try await store.recordSuccess(entry.id, serverID: serverID, at: clock.now())
            report.delivered += 1
            metrics.delivered.increment()
            publish(.delivered(entry.id, serverID: serverID))

        case .permanent(let reason, let status):
            try await quarantine(entry.id, reason: reason, httpStatus: status, into: &report)

        case .transient(let reason, let status, let retryAfter):
            let now = clock.now()
            let wait = retryAfter ?? configuration.backoff.delay(afterAttempt: entry.attempts, using: &random)
            let retryAt = now.adding(wait)
            if let maximumAge = configuration.maximumAge, retryAt >= entry.createdAt.adding(maximumAge) {
                try await quarantine(entry.id, reason: "expired after: \(reason)", httpStatus: status, into: &report)
                return
            }
            let (newStatus, cascade) = try await store.recordFailure(entry.id, error: reason, httpStatus: status, retryAt: retryAt)
            if newStatus == .dead {
                report.quarantined += 1
                metrics.quarantined.increment()
                publish(.quarantined(entry.id, reason: "gave up after \(entry.attempts) attempt(s): \(reason)"))
                publishCascade(cascade, parent: entry.id)
            } else {
                report.retried += 1
                metrics.retried.increment()
                publish(.retryScheduled(entry.id, at: retryAt, reason: reason))
            }

        case .conflict(let reason, let status):
            report.conflicts += 1
            metrics.conflicts.increment()
            switch handler.conflictPolicy {
            case .serverWins:
                // The attempt is over; the entry is no longer in flight.
                try await store.markConflict(entry.id, reason: reason, httpStatus: status)
                let cascade = try await store.discard(entry.id)
                report.discarded += 1
                report.quarantined += cascade.dependents.count
                metrics.quarantined.increment(by: cascade.dependents.count)
                publish(.discarded(entry.id, reason: "server wins: \(reason)"))
                for dependent in cascade.dependents {
                    publish(.quarantined(dependent, reason: "dependencyFailed: \(entry.id) was discarded (server wins)"))
                }
            case .clientWins:
                // Resend what was sent: the same remapped endpoint and payload.
                let resend = delivery ?? OutboxDelivery(entry: entry, endpoint: entry.endpoint, payload: entry.payload, attempt: entry.attempts)
                let deadline = clock.now().adding(configuration.deliveryTimeout)
                let retried = await DeadlineRace.run(until: deadline, clock: clock) { try await handler.resendAfterConflict(resend) }
                if case .timedOut(let abandoned) = retried { remember(abandoned, for: entry.id) }
                if case .finished(.success(let second)) = retried, second != outcome, !second.isConflict {
                    try await apply(second, to: entry, delivery: resend, handler: handler, into: &report)
                } else {
                    try await store.markConflict(entry.id, reason: reason, httpStatus: status)
                    publish(.conflict(entry.id, reason: reason))
                }
            case .manual:
                try await store.markConflict(entry.id, reason: reason, httpStatus: status)
                publish(.conflict(entry.id, reason: reason))
            }
        }
    }

    private func quarantine(
        _ id: OutboxEntry.ID, reason: String, httpStatus: Int?, into report: inout OutboxFlushReport
    ) async throws(OutboxError) {
        let cascade = try await store.quarantine(id, reason: reason, httpStatus: httpStatus)
        report.quarantined += 1 + cascade.dependents.count
        metrics.quarantined.increment(by: 1 + cascade.dependents.count)
        logger.warning("quarantined an entry", metadata: ["id": "\(id)", "reason": "\(reason)"])
        publish(.quarantined(id, reason: reason))
        publishCascade(cascade, parent: id)
    }

    private func publishCascade(_ cascade: OutboxCascade, parent: OutboxEntry.ID) {
        for dependent in cascade.dependents { publish(.quarantined(dependent, reason: "dependencyFailed: \(parent) is dead")) }
    }

    private nonisolated func publish(_ event: OutboxEvent) { broadcaster.publish(event) }
}

/// How many attempts of a drain have ended (shared with the attempt tasks).
private final class FinishedAttempts: Sendable {
    let count = Atomic<Int>(0)
}

extension OutboxOutcome {
    var isConflict: Bool {
        if case .conflict = self { return true }
        return false
    }
}

extension Date {
    func adding(_ duration: Duration) -> Date {
        addingTimeInterval(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}

/// The dispatcher's counters and timers (swift-metrics; no-ops until the app
/// bootstraps a metrics backend).
struct DispatcherMetrics: Sendable {
    let enqueued = Counter(label: "outbox_enqueued_total")
    let delivered = Counter(label: "outbox_delivered_total")
    let retried = Counter(label: "outbox_retries_total")
    let quarantined = Counter(label: "outbox_quarantined_total")
    let conflicts = Counter(label: "outbox_conflicts_total")
    let deliveryTime = Metrics.Timer(label: "outbox_delivery_duration")
}

/// Backoff jitter: seeded (tests) or from the system.
struct JitterRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    private let system: Bool

    init(seed: UInt64?) {
        state = seed ?? 0
        system = seed == nil
    }

    mutating func next() -> UInt64 {
        if system {
            var generator = SystemRandomNumberGenerator()
            return generator.next()
        }
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
