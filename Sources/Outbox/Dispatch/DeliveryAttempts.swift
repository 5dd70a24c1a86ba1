import Foundation
import Logging
import OutboxLocking

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
    let broadcaster: EventBroadcaster
    let metrics: DispatcherMetrics
    /// Backoff jitter, shared by every attempt.
    let jitter: Locked<JitterRandom>
    let abandoned = AbandonedDeliveries()
    /// Not-sent and interrupted attempts in a row, per entry, in this
    /// process: the exponent of their backoff. Cleared by any other outcome.
    let streaks = Locked<[OutboxEntry.ID: Int]>([:])
    /// Entries the server reports in progress, in this process: since when
    /// (the first such answer in a row) and how many polls so far. Cleared
    /// by any other outcome.
    let inProgressRuns = Locked<[OutboxEntry.ID: (since: Date, polls: Int)]>([:])

    var logger: Logger { configuration.logger }

    init(
        store: any OutboxStore, configuration: OutboxDispatcherConfiguration, clock: any OutboxClock,
        broadcaster: EventBroadcaster, metrics: DispatcherMetrics
    ) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.broadcaster = broadcaster
        self.metrics = metrics
        self.jitter = Locked(JitterRandom(seed: configuration.randomSeed))
    }

    /// Delivers one claimed (in-flight) entry and records the outcome. Every
    /// attempt ends with a recorded outcome: if recording fails, the entry's
    /// lease is released as an interrupted attempt, and if even that fails,
    /// the running dispatcher reclaims the lease when it expires.
    func attempt(_ entry: OutboxEntry, with handler: any OutboxHandler) async -> OutboxFlushReport {
        var report = OutboxFlushReport()
        do throws(OutboxError) {
            // No expiry check here: an entry past its maximum age is asked
            // once more, and expires only if the server answers that attempt
            // with another failure (recordTransient). A week offline after
            // the server's last answer must not kill a write unasked.
            if let since = entry.outcomeUnknownSince, let reason = keyMayBeForgotten(since: since) {
                try await leaveForTheApp(entry, reason: reason, httpStatus: nil, into: &report)
                return report
            }
            if let stillRunning = await previousDeliveryStillRunning(entry.id) {
                try await apply(stillRunning, to: entry, delivery: nil, handler: handler, into: &report)
                return report
            }
            // The attempt's clock starts before it is announced: whoever
            // sees `.sending` knows when its delivery timeout runs out.
            let started = clock.now()
            publish(.sending(entry.id, attempt: entry.attempts))

            var outcome: OutboxOutcome
            var sent: OutboxDelivery?
            do throws(OutboxError) {
                switch try await resolveReferences(entry) {
                case .unresolved(let unresolved):
                    outcome = unresolved
                case .resolved(let delivery):
                    let timer = ContinuousClock.now
                    outcome = await deliver(delivery, with: handler, startedAt: started)
                    metrics.deliveryTime.record(duration: timer.duration(to: .now))
                    sent = delivery
                }
            } catch {
                // Nothing was sent: end the attempt, do not leave it in flight.
                outcome = .notSent(reason: "cannot resolve its local: references: \(error)")
            }
            try await apply(outcome, to: entry, delivery: sent, handler: handler, startedAt: started, into: &report)
        } catch {
            report.errors.append("\(entry.id): \(error)")
            publish(.storeFailed(entry.id, error: error))
            logger.error("attempt failed in the store", metadata: ["id": "\(entry.id)", "error": "\(error)"])
            await release(entry, because: error)
        }
        return report
    }

    /// Ends an attempt whose outcome could not be recorded: the entry goes
    /// back to the queue as interrupted, due at once.
    private func release(_ entry: OutboxEntry, because error: OutboxError) async {
        guard let current = try? await store.entry(entry.id), current.status == .inFlight else { return }
        // Whatever the server answered is lost with it: the outcome is unknown.
        _ = try? await store.recordFailure(
            entry.id, error: "interrupted: the outcome could not be recorded (\(error))", httpStatus: nil,
            retryAt: clock.now(), countsAsAttempt: false, serverAnsweredAt: nil, outcomeUnknownAt: clock.now())
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
            + "\(Self.describe(retention)); resend it with the same key (retry) if the server did not apply it, "
            + "or mark it delivered with the server id you found (markDelivered)"
    }

    /// `300 s` as "5 minutes", `90 s` as "90 seconds", `24 h` as "24 hours".
    static func describe(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        if seconds >= 7200 && seconds % 3600 == 0 { return "\(seconds / 3600) hours" }
        if seconds >= 120 && seconds % 60 == 0 { return "\(seconds / 60) minutes" }
        return "\(seconds) second\(seconds == 1 ? "" : "s")"
    }

    /// The entry with its `local:` references replaced by server ids, or the
    /// outcome to record if one cannot be resolved.
    enum Resolution {
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

    /// Runs the handler with a timeout. A thrown error is transient; a
    /// timeout, or a cancellation by the dispatcher (``OutboxDispatcher/stop()``,
    /// a drain's deadline), is an interrupted attempt: the request may have
    /// been sent.
    private func deliver(
        _ delivery: OutboxDelivery, with handler: any OutboxHandler, startedAt started: Date
    ) async -> OutboxOutcome {
        let deadline = started.adding(configuration.deliveryTimeout)
        let result = await DeadlineRace.run(until: deadline, clock: clock) { try await handler.deliver(delivery) }
        switch result {
        case .finished(.success(let outcome)): return outcome
        case .finished(.failure(let error)):
            if Task.isCancelled || error is CancellationError {
                return .interrupted(reason: "the attempt was cancelled (the dispatcher stopped or its deadline passed)")
            }
            return .transient(reason: "the handler threw: \(error)", httpStatus: nil, retryAfter: nil)
        case .timedOut(let abandoned):
            self.abandoned.remember(abandoned, for: delivery.entry.id)
            return .interrupted(reason: "no outcome within the delivery timeout of \(configuration.deliveryTimeout)")
        case .cancelled(let abandoned):
            self.abandoned.remember(abandoned, for: delivery.entry.id)
            return .interrupted(reason: "the attempt was cancelled (the dispatcher stopped)")
        }
    }

    /// If an earlier attempt's handler still runs, waits for it (up to the
    /// delivery timeout); the outcome to record instead of sending if it
    /// outlasts that too.
    private func previousDeliveryStillRunning(_ id: OutboxEntry.ID) async -> OutboxOutcome? {
        guard let previous = abandoned.running(id) else { return nil }
        let deadline = clock.now().adding(configuration.deliveryTimeout)
        if case .finished = await DeadlineRace.run(until: deadline, clock: clock, { await previous.value }) { return nil }
        return .transient(
            reason: "not sent: the handler of an earlier attempt is still running (it ignores cancellation)",
            httpStatus: nil, retryAfter: nil)
    }

    func publish(_ event: OutboxEvent) { broadcaster.publish(event) }
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
