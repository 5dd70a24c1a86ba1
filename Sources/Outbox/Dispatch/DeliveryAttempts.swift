import Foundation
import Logging
import OutboxLocking
import OutboxStorage
import OutboxModel

/// One delivery attempt of a claimed entry: resolve its `local:`
/// references, run its handler under the watchdog, record the outcome.
///
/// Everything here is `Sendable` state the dispatcher hands over, so
/// attempts run concurrently without hopping onto the dispatcher's actor for
/// every store call; the actor keeps only what coordinates drains.
final class DeliveryAttempts: Sendable {
    let store: any OutboxStore
    let configuration: OutboxDispatcherConfiguration
    let clock: any OutboxClock
    let events: OutboxEventPublisher
    let metrics: DispatcherMetrics
    /// Backoff jitter, shared by every attempt.
    let jitter: Locked<JitterRandom>
    let abandoned = AbandonedDeliveries()
    /// The one timer that ends attempts past their delivery timeout.
    let watchdog: AttemptWatchdog
    /// Entries already reported as having no handler (reported once each).
    let reportedUnhandled = Locked<Set<OutboxEntry.ID>>([])
    /// Runs of outcomes in a row, per entry, in this process (one lock: a
    /// delivery clears both).
    let runs = Locked(AttemptRuns())

    var logger: Logger { configuration.logger }

    init(
        store: any OutboxStore, configuration: OutboxDispatcherConfiguration, clock: any OutboxClock,
        events: OutboxEventPublisher, metrics: DispatcherMetrics
    ) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.events = events
        self.metrics = metrics
        self.jitter = Locked(JitterRandom(seed: configuration.randomSeed))
        self.watchdog = AttemptWatchdog(clock: clock)
    }

    deinit { watchdog.shutdown() }

    /// Starts a worker: a task that holds one delivery slot and runs
    /// attempts on the entries queued in `inbox` until none is left (or it
    /// may start no more), then leaves its slot.
    func startWorker(inbox: AttemptInbox, switches: DispatcherSwitches) {
        let worker = inbox.addWorker()
        worker.track(Task { await self.work(worker, inbox: inbox, switches: switches) })
    }

    private func work(_ worker: DeliveryWorker, inbox: AttemptInbox, switches: DispatcherSwitches) async {
        let clock = self.clock
        let freshFor = configuration.leaseGrace / 2
        while !Task.isCancelled, let queued = inbox.next(for: worker, mayStart: { switches.mayClaim(clock) }) {
            // Claimed too long ago (slow handlers ahead of it): its lease,
            // counted from the claim, must outlast the attempt. Give it back.
            if clock.now() >= queued.claimedAt.adding(freshFor) {
                let report = await giveBack(queued.entry, reason: "claimed ahead and not started while its lease was fresh")
                inbox.ended(report: report)
                continue
            }
            let number = worker.begin(queued.entry, handler: queued.handler)
            await run(worker, number, queued.entry, queued.handler, inbox: inbox)
        }
    }

    /// Delivers one claimed entry and records the outcome — a success goes
    /// to the drain loop, which records a batch of them in one write. Every
    /// attempt ends with a recorded outcome: if recording fails, the entry's
    /// lease is released as an interrupted attempt, and if even that fails,
    /// the running dispatcher reclaims the lease when it expires.
    private func run(
        _ worker: DeliveryWorker, _ number: UInt64, _ entry: OutboxEntry, _ handler: any OutboxHandler,
        inbox: AttemptInbox
    ) async {
        var report = OutboxFlushReport()
        var handlerTime: Duration?
        // Whether the request may have gone out: the handler ran and did
        // not say it was never sent.
        var mayHaveGoneOut = false
        do throws(OutboxError) {
            // No expiry check here: an entry past its maximum age is asked
            // once more, and expires only if the server answers that attempt
            // with another failure (recordTransient). A week offline after
            // the server's last answer must not kill a write unasked.
            if let since = entry.outcomeUnknownSince, let reason = keyMayBeForgotten(since: since) {
                guard worker.finish(number) else { return }
                try await leaveForTheApp(entry, OutboxFailure(.keyMayBeForgotten, message: reason), into: &report)
                inbox.ended(report: report)
                return
            }
            if let stillRunning = await previousDeliveryStillRunning(entry.id) {
                guard worker.finish(number) else { return }
                try await apply(stillRunning, to: entry, delivery: nil, handler: handler, into: &report)
                inbox.ended(report: report)
                return
            }
            // The attempt's clock starts before it is announced: whoever
            // sees `.sending` knows when its delivery timeout runs out.
            let started = clock.now()
            publish(.sending(entry.id, attempt: entry.attempts))

            var outcome: OutboxOutcome
            var cause: OutboxFailure.Cause?
            var sent: OutboxDelivery?
            let resolution: Resolution
            do throws(OutboxError) {
                resolution = try await resolveReferences(entry)
            } catch {
                // Nothing was sent: end the attempt, do not leave it in flight.
                resolution = .unresolved(.notSent(reason: "cannot resolve its local: references: \(error)"), cause: .notSent)
            }
            switch resolution {
            case .unresolved(let unresolved, let why):
                guard worker.finish(number) else { return }
                outcome = unresolved
                cause = why
            case .resolved(let delivery):
                guard let (delivered, why, took) = await deliver(delivery, with: handler, worker, number, inbox: inbox, at: started)
                else {
                    return
                }
                outcome = delivered
                cause = why
                if case .notSent = delivered {} else { mayHaveGoneOut = true }
                handlerTime = took
                sent = delivery
            }
            switch outcome {
            case .delivered(let serverID):
                inbox.ended(report: report, delivered: .init(id: entry.id, serverID: serverID, replayed: false), handlerTime: handlerTime)
                return
            case .replayed(let serverID):
                inbox.ended(report: report, delivered: .init(id: entry.id, serverID: serverID, replayed: true), handlerTime: handlerTime)
                return
            default:
                try await apply(
                    outcome, to: entry, delivery: sent, handler: handler, startedAt: started, cause: cause, into: &report)
            }
        } catch {
            report.errors.append(error.about(entry.id))
            publish(.storeFailed(entry.id, error: error))
            logger.error("attempt failed in the store", metadata: ["id": "\(entry.id)", "error": "\(error)"])
            await release(entry.id, because: error, sent: mayHaveGoneOut)
        }
        inbox.ended(report: report, handlerTime: handlerTime)
    }

    /// Gives a claimed entry that was never sent back to the queue, due at
    /// once, its attempt not counted.
    func giveBack(_ entry: OutboxEntry, reason: String) async -> OutboxFlushReport {
        var report = OutboxFlushReport()
        let now = clock.now()
        do throws(OutboxError) {
            let failure = OutboxFailure(.notSent, message: reason)
            _ = try await store.recordFailure(
                entry.id, failure, retryAt: now, countsAsAttempt: false, serverAnsweredAt: nil, outcomeUnknownAt: nil)
            report.notSent += 1
            publish(.waitingToRetry(entry.id, at: now, failure: failure))
        } catch {
            report.errors.append(error.about(entry.id))
            publish(.storeFailed(entry.id, error: error))
            logger.error("cannot give back a claimed entry", metadata: ["id": "\(entry.id)", "error": "\(error)"])
        }
        return report
    }

    /// Ends an attempt whose outcome could not be recorded: the entry goes
    /// back to the queue after the interrupted backoff — interrupted if the
    /// request may have gone out (`sent`: whatever the server answered is
    /// lost with it, so the outcome is unknown), not sent otherwise.
    func release(_ id: OutboxEntry.ID, because error: OutboxError, sent: Bool) async {
        guard let current = try? await store.entry(id), current.status == .inFlight else { return }
        let message = "the outcome could not be recorded (\(error))"
        // Backed off like an interrupted attempt: a refusal that repeats
        // must not turn into a resend loop.
        let retryAt = clock.now().adding(nextDelay(for: id, using: configuration.interruptedBackoff))
        _ = try? await store.recordFailure(
            id, OutboxFailure(sent ? .interrupted : .notSent, message: message), retryAt: retryAt,
            countsAsAttempt: false, serverAnsweredAt: nil, outcomeUnknownAt: sent ? clock.now() : nil)
    }

    /// Why an entry whose earliest attempt of unknown outcome was made at
    /// `since` must not be resent blindly, if it must not: the server may
    /// have forgotten its key (``OutboxDispatcherConfiguration/keyRetention``,
    /// less one lease: after a crash, only the lease's end is known).
    func keyMayBeForgotten(since: Date) -> String? {
        guard let retention = configuration.keyRetention else { return nil }
        let margin = configuration.deliveryTimeout + configuration.leaseGrace
        guard clock.now() >= since.adding(retention).adding(.zero - margin) else { return nil }
        return "outcome unknown and the server may have forgotten the key: an attempt made at "
            + "\(ISO8601DateFormatter().string(from: since)) got no answer, and the server keeps keys for "
            + "\(retention.spokenText); resend it with the same key (retry) if the server did not apply it, "
            + "or mark it delivered with the server id you found (markDelivered)"
    }

    /// The entry with its `local:` references replaced by server ids, or the
    /// outcome to record if one cannot be resolved.
    enum Resolution {
        case resolved(OutboxDelivery)
        /// Not sent: the outcome to record, and its cause.
        case unresolved(OutboxOutcome, cause: OutboxFailure.Cause)
    }

    private func resolveReferences(_ entry: OutboxEntry) async throws(OutboxError) -> Resolution {
        if let unsendable = await checkLargePayload(entry) { return unsendable }
        var mapping: [OutboxEntry.ID: String] = [:]
        for reference in LocalReferenceRemapper.references(endpoint: entry.endpoint, payload: entry.payload) {
            if let completion = try await store.completion(of: reference) {
                guard let serverID = completion.serverID else {
                    return .unresolved(
                        .permanent(reason: "\(reference.localReference) was delivered without a server id", httpStatus: nil),
                        cause: .unresolvedReference)
                }
                mapping[reference] = serverID
            } else if try await store.state(of: reference) != nil {  // from memory: no body is read
                return .unresolved(
                    .transient(
                        reason: "waiting for \(reference.localReference) to be delivered (declare it as a dependency)",
                        httpStatus: nil, retryAfter: nil),
                    cause: .unresolvedReference)
            } else {
                return .unresolved(
                    .permanent(reason: "unknown local reference \(reference.localReference)", httpStatus: nil),
                    cause: .unresolvedReference)
            }
        }
        let remapped = LocalReferenceRemapper.remap(endpoint: entry.endpoint, payload: entry.payload) { mapping[$0] }
        for (local, server) in mapping { publish(.remapped(entry.id, local: local, serverID: server)) }
        return .resolved(OutboxDelivery(entry: entry, endpoint: remapped.endpoint, payload: remapped.payload, attempt: entry.attempts))
    }

    /// Runs the handler in this task, watched by the dispatcher's watchdog.
    /// Returns its outcome — a thrown error is transient, cause
    /// ``/OutboxModel/OutboxFailure/Cause/handlerError`` — and the handler's time, or `nil` if the watchdog (the delivery timeout) or a stop ended
    /// the attempt first: they record it as interrupted (``expire(_:_:inbox:reason:)``).
    private func deliver(
        _ delivery: OutboxDelivery, with handler: any OutboxHandler, _ worker: DeliveryWorker, _ number: UInt64,
        inbox: AttemptInbox, at started: Date
    ) async -> (OutboxOutcome, OutboxFailure.Cause?, Duration)? {
        // A strong reference: a watch ends at its deadline at the latest.
        let watch = watchdog.watch(until: started.adding(configuration.deliveryTimeout)) {
            self.expire(worker, number, inbox: inbox, reason: .timedOut)
        }
        // Ended before it was sent (a stop): whoever ended it records it.
        guard worker.sending(number, at: started, watch: watch) else {
            watchdog.unwatch(watch)
            return nil
        }
        let timer = ContinuousClock.now
        let result: Result<OutboxOutcome, any Error>
        do { result = .success(try await handler.deliver(delivery)) } catch { result = .failure(error) }
        let won = worker.finish(number)
        watchdog.unwatch(watch)
        guard won else { return nil }
        let took = timer.duration(to: .now)
        metrics.deliveryTime.record(duration: took)
        switch result {
        case .success(let outcome): return (outcome, nil, took)
        case .failure(let error) where error is CancellationError:
            return (.interrupted(reason: "the attempt was cancelled (the dispatcher stopped or its deadline passed)"), nil, took)
        case .failure(let error):
            return (.transient(reason: "\(error)", httpStatus: nil, retryAfter: nil), .handlerError, took)
        }
    }

    /// Why an attempt was ended from outside.
    enum Expiry {
        case timedOut
        case stopped

        func reason(_ configuration: OutboxDispatcherConfiguration) -> String {
            switch self {
            case .timedOut: "no outcome within the delivery timeout of \(configuration.deliveryTimeout)"
            case .stopped: "the attempt was cancelled (the dispatcher stopped)"
            }
        }
    }

    /// Ends `worker`'s running attempt (`number`, or whichever runs) from
    /// outside — its delivery timeout passed, or the drain is stopping —
    /// unless it ended first: cancels the worker's task without waiting for
    /// it (remembered, so the entry's next attempt waits for a handler that
    /// ignores cancellation), abandons the worker (its slot is refilled),
    /// and records the attempt: interrupted if the handler was called (the
    /// request may have gone out), not sent otherwise.
    func expire(_ worker: DeliveryWorker, _ number: UInt64?, inbox: AttemptInbox, reason: Expiry) {
        guard let (task, attempt) = worker.expire(number) else { return }
        let entry = attempt.entry
        if let task { abandoned.remember(task, for: entry.id) }
        inbox.abandon(worker)
        Task {
            var report = OutboxFlushReport()
            let outcome: OutboxOutcome =
                attempt.sentAt == nil
                ? .notSent(reason: "the dispatcher stopped before the attempt was sent")
                : .interrupted(reason: reason.reason(configuration))
            do throws(OutboxError) {
                try await apply(
                    outcome, to: entry, delivery: nil, handler: attempt.handler, startedAt: attempt.sentAt, into: &report)
            } catch {
                report.errors.append(error.about(entry.id))
                publish(.storeFailed(entry.id, error: error))
                logger.error("attempt failed in the store", metadata: ["id": "\(entry.id)", "error": "\(error)"])
                await release(entry.id, because: error, sent: attempt.sentAt != nil)
            }
            inbox.ended(report: report, afterExpiry: true)
        }
    }

    /// If an earlier attempt's handler still runs, waits for it (up to the
    /// delivery timeout); the outcome to record instead of sending if it
    /// outlasts that too.
    private func previousDeliveryStillRunning(_ id: OutboxEntry.ID) async -> OutboxOutcome? {
        guard let previous = abandoned.running(id) else { return nil }
        let deadline = clock.now().adding(configuration.deliveryTimeout)
        if case .finished = await DeadlineRace.run(until: deadline, watchdog: watchdog, { await previous.value }) {
            return nil
        }
        return .transient(
            reason: "not sent: the handler of an earlier attempt is still running (it ignores cancellation)",
            httpStatus: nil, retryAfter: nil)
    }

    func publish(_ event: @autoclosure () -> OutboxEvent) { events.publish(event()) }
}

/// Handlers the watchdog gave up on that may still be running (they ignore
/// cancellation), by entry: the entry's next attempt waits for them, so an
/// entry is never sent twice at once.
final class AbandonedDeliveries: Sendable {
    private let running = Locked<[OutboxEntry.ID: Task<Void, Never>]>([:])

    /// Keeps `task` until it really ends.
    func remember(_ task: Task<Void, Never>, for id: OutboxEntry.ID) {
        running.withLock { $0[id] = task }
        Task {
            await task.value
            self.running.withLock { if $0[id] == task { $0[id] = nil } }
        }
    }

    func running(_ id: OutboxEntry.ID) -> Task<Void, Never>? { running.withLock { $0[id] } }
}

extension OutboxOutcome {
    var isConflict: Bool {
        if case .conflict = self { return true }
        return false
    }

    var isAlreadyProcessed: Bool {
        if case .alreadyProcessed = self { return true }
        return false
    }
}

/// Runs of the same outcome in a row, per entry, in this process; each is
/// cleared by any other outcome.
struct AttemptRuns {
    /// Not-sent and interrupted attempts in a row: the exponent of their backoff.
    var streaks: [OutboxEntry.ID: Int] = [:]
    /// In-progress answers in a row: since when (the first) and how many polls so far.
    var inProgress: [OutboxEntry.ID: (since: Date, polls: Int)] = [:]
}
