import Foundation
import Logging
import OutboxStorage
import OutboxModel

/// Recording how an attempt ended: the outcome rules of Docs/DISPATCH.md.
extension DeliveryAttempts {
    /// Records `outcome` of an attempt on `entry`; `delivery` is what was
    /// sent (references remapped), if anything was, and `startedAt` when.
    /// `cause` names a transient or permanent outcome's cause when the
    /// dispatcher, not the handler, decided it (a damaged payload file, an
    /// unresolved reference, a handler that threw).
    func apply(
        _ outcome: OutboxOutcome, to entry: OutboxEntry, delivery: OutboxDelivery?, handler: any OutboxHandler,
        startedAt: Date? = nil, cause: OutboxFailure.Cause? = nil, into report: inout OutboxFlushReport
    ) async throws(OutboxError) {
        if case .inProgress = outcome {} else { runs.withLock { $0.inProgress[entry.id] = nil } }
        switch outcome {
        case .delivered(let serverID), .replayed(let serverID):
            runs.withLock { $0.streaks[entry.id] = nil }
            try await store.recordSuccess(entry.id, serverID: keptServerID(serverID, of: entry.id), at: clock.now())
            report.delivered += 1
            metrics.delivered.increment()
            if case .replayed = outcome {
                report.replayed += 1
                metrics.replayed.increment()
                publish(.replayed(entry.id, serverID: serverID))
            }
            publish(.delivered(entry.id, serverID: serverID))

        case .permanent(let reason, let status):
            try await quarantine(entry, Self.failure(cause ?? .permanent, status: status, reason: reason), into: &report)

        case .transient(let reason, let status, let retryAfter):
            try await recordTransient(
                entry, Self.failure(cause ?? .transient, status: status, reason: reason), retryAfter: retryAfter,
                into: &report)

        case .notSent(let reason):
            // The server never saw it: back off (capped), but never count it.
            let retryAt = clock.now().adding(nextDelay(for: entry.id, using: configuration.backoff))
            let failure = OutboxFailure(.notSent, message: reason)
            _ = try await store.recordFailure(
                entry.id, failure, retryAt: retryAt, countsAsAttempt: false, serverAnsweredAt: nil, outcomeUnknownAt: nil)
            report.notSent += 1
            metrics.notSent.increment()
            publish(.waitingToRetry(entry.id, at: retryAt, failure: failure))

        case .interrupted(let reason):
            // Sent, answer lost: resend soon with the same key. The outcome
            // is unknown from now on (the key-retention guard counts from
            // the earliest such attempt).
            let retryAt = clock.now().adding(nextDelay(for: entry.id, using: configuration.interruptedBackoff))
            let failure = OutboxFailure(.interrupted, message: reason)
            _ = try await store.recordFailure(
                entry.id, failure, retryAt: retryAt, countsAsAttempt: false, serverAnsweredAt: nil,
                outcomeUnknownAt: startedAt ?? clock.now())
            report.interrupted += 1
            metrics.interrupted.increment()
            publish(.interrupted(entry.id, at: retryAt, failure: failure))

        case .inProgress(let reason, let retryAfter):
            try await recordInProgress(entry, reason: reason, retryAfter: retryAfter, into: &report)

        case .alreadyProcessed(let reason, let status):
            // Applied, most likely, but the answer is gone: a person (or the
            // app) decides; dependents wait instead of being quarantined.
            try await leaveForTheApp(
                entry, Self.failure(.alreadyProcessed, status: status, reason: reason), into: &report)

        case .conflict(let reason, let status):
            try await resolveConflict(
                outcome, Self.failure(.conflict, status: status, reason: reason), entry: entry, delivery: delivery,
                handler: handler, into: &report)
        }
    }

    /// The failure a handler's outcome stands for: a status no answer has
    /// (outside ``/OutboxModel/OutboxFailure/httpStatuses``) is left out, its number
    /// kept in the message, as the store would refuse it.
    static func failure(_ cause: OutboxFailure.Cause, status: Int?, reason: String) -> OutboxFailure {
        guard let status, !OutboxFailure.httpStatuses.contains(status) else {
            return OutboxFailure(cause, httpStatus: status, message: reason)
        }
        return OutboxFailure(cause, message: "\(reason) (the handler's HTTP status \(status) is not 100…999)")
    }

    /// The server still processes an earlier request with this key: poll
    /// again after its (clamped) `Retry-After`, or after a short jittered
    /// delay; not counted. Past the in-progress budget, counted from the
    /// first such answer in a row, the entry is left for the app.
    private func recordInProgress(
        _ entry: OutboxEntry, reason: String, retryAfter: Duration?, into report: inout OutboxFlushReport
    ) async throws(OutboxError) {
        let now = clock.now()
        let run = runs.withLock { runs -> (since: Date, polls: Int) in
            runs.streaks[entry.id] = nil
            let run = (since: runs.inProgress[entry.id]?.since ?? now, polls: (runs.inProgress[entry.id]?.polls ?? 0) + 1)
            runs.inProgress[entry.id] = run
            return run
        }
        if now >= run.since.adding(configuration.inProgressBudget) {
            runs.withLock { $0.inProgress[entry.id] = nil }
            let message =
                "\(configuration.inProgressBudget.spokenText), \(run.polls) polls (the last: \(reason)); "
                + "retry it later with the same key, or mark it delivered if the server applied it"
            try await leaveForTheApp(entry, OutboxFailure(.inProgressTooLong, httpStatus: 409, message: message), into: &report)
            return
        }
        let wait = retryAfter.map(clampRetryAfter) ?? inProgressDelay(poll: run.polls)
        let retryAt = now.adding(wait)
        let failure = OutboxFailure(.inProgress, httpStatus: 409, message: reason)
        _ = try await store.recordFailure(
            entry.id, failure, retryAt: retryAt, countsAsAttempt: false, serverAnsweredAt: now, outcomeUnknownAt: nil)
        report.inProgress += 1
        publish(.waitingToRetry(entry.id, at: retryAt, failure: failure))
    }

    /// The n-th in-progress poll's delay: uniform in `[c/2, c]`, `c = min(cap,
    /// base · 2^(n−1))` — short, never zero, and jittered so that clients
    /// polling together drift apart.
    func inProgressDelay(poll: Int) -> Duration {
        let backoff = configuration.inProgressBackoff
        let ceiling = min(
            OutboxBackoff.seconds(backoff.cap), OutboxBackoff.seconds(backoff.base) * pow(2, Double(min(max(poll, 1) - 1, 40))))
        let drawn = jitter.withLock { Double.random(in: 0.5...1, using: &$0) }
        return .milliseconds(Int64((ceiling * drawn * 1000).rounded()))
    }

    /// Leaves an entry in `conflict` for the app, although the server
    /// reported no conflict with its data (already processed, in progress
    /// past the budget, an unknown outcome older than the key retention):
    /// whatever the conflict policy, and its dependents wait.
    func leaveForTheApp(
        _ entry: OutboxEntry, _ failure: OutboxFailure, into report: inout OutboxFlushReport
    ) async throws(OutboxError) {
        runs.withLock { $0.streaks[entry.id] = nil }
        try await store.markConflict(entry.id, failure)
        report.conflicts += 1
        report.needsAttention += 1
        metrics.conflicts.increment()
        logger.warning("needs attention: \(entry.method) \(entry.endpoint): \(failure)", metadata: metadata(entry, failure))
        publish(.conflict(entry.id, failure: failure))
    }

    /// A failure the server answered (or a thrown error): counted; backoff
    /// or the server's clamped `Retry-After`; quarantined past `maxAttempts`
    /// or the maximum age since the server's first answer.
    func recordTransient(
        _ entry: OutboxEntry, _ failure: OutboxFailure, retryAfter: Duration?, into report: inout OutboxFlushReport
    ) async throws(OutboxError) {
        let status = failure.httpStatus
        if let status, configuration.unavailableStatuses.contains(status) {
            try await recordUnavailable(entry, failure.becoming(.unavailable), retryAfter: retryAfter, into: &report)
            return
        }
        let now = clock.now()
        let wait = retryAfter.map(clampRetryAfter)
            ?? jitter.withLock { configuration.backoff.delay(afterAttempt: entry.attempts, using: &$0) }
        let retryAt = now.adding(wait)
        let answered = status == nil ? nil : now
        if let maximumAge = configuration.maximumAge, let first = entry.firstAnswerAt ?? answered,
            retryAt >= first.adding(maximumAge)
        {
            try await quarantine(entry, failure.becoming(.expired), into: &report)
            return
        }
        runs.withLock { $0.streaks[entry.id] = nil }
        let (newStatus, cascade) = try await store.recordFailure(
            entry.id, failure, retryAt: retryAt, countsAsAttempt: true, serverAnsweredAt: answered, outcomeUnknownAt: nil)
        if newStatus == .quarantined {
            publishGaveUp(entry, failure, cascade: cascade, into: &report)
        } else {
            report.waitingToRetry += 1
            metrics.waitingToRetry.increment()
            publish(.waitingToRetry(entry.id, at: retryAt, failure: failure))
        }
    }

    /// An entry the store quarantined because the attempt was its last.
    func publishGaveUp(
        _ entry: OutboxEntry, _ failure: OutboxFailure, cascade: OutboxCascade, into report: inout OutboxFlushReport
    ) {
        let gaveUp = failure.becoming(.attemptsUsedUp)
        report.quarantined += 1 + cascade.dependents.count
        metrics.quarantined.increment(by: 1 + cascade.dependents.count)
        warnQuarantined(entry, gaveUp)
        publish(.quarantined(entry.id, failure: gaveUp))
        publishCascade(cascade, cause: .quarantined(entry.id))
    }

    /// A conflict, resolved by the handler's policy.
    private func resolveConflict(
        _ outcome: OutboxOutcome, _ failure: OutboxFailure, entry: OutboxEntry, delivery: OutboxDelivery?,
        handler: any OutboxHandler, into report: inout OutboxFlushReport
    ) async throws(OutboxError) {
        runs.withLock { $0.streaks[entry.id] = nil }
        report.conflicts += 1
        metrics.conflicts.increment()
        switch handler.conflictPolicy {
        case .serverWins:
            // The attempt is over; the entry is no longer in flight.
            try await store.markConflict(entry.id, failure)
            let cascade = try await store.discard(entry.id)
            report.discarded += 1
            report.quarantined += cascade.dependents.count
            metrics.quarantined.increment(by: cascade.dependents.count)
            publish(.discarded(entry.id, because: .serverWon(failure)))
            publishCascade(cascade, cause: .discarded(entry.id))
        case .clientWins:
            // Resend what was sent: the same remapped endpoint and payload.
            let resend = delivery ?? OutboxDelivery(entry: entry, endpoint: entry.endpoint, payload: entry.payload, attempt: entry.attempts)
            let deadline = clock.now().adding(configuration.deliveryTimeout)
            let retried = await DeadlineRace.run(until: deadline, watchdog: watchdog) { try await handler.resendAfterConflict(resend) }
            switch retried {
            case .timedOut(let stillRunning), .cancelled(let stillRunning): abandoned.remember(stillRunning, for: entry.id)
            case .finished: break
            }
            if case .finished(.success(let second)) = retried, second != outcome, !second.isConflict, !second.isAlreadyProcessed {
                try await apply(second, to: entry, delivery: resend, handler: handler, startedAt: clock.now(), into: &report)
            } else {
                try await store.markConflict(entry.id, failure)
                publish(.conflict(entry.id, failure: failure))
            }
        case .manual:
            try await store.markConflict(entry.id, failure)
            publish(.conflict(entry.id, failure: failure))
        }
    }

    func quarantine(_ entry: OutboxEntry, _ failure: OutboxFailure, into report: inout OutboxFlushReport) async throws(OutboxError) {
        runs.withLock { $0.streaks[entry.id] = nil }
        let cascade = try await store.quarantine(entry.id, failure)
        report.quarantined += 1 + cascade.dependents.count
        metrics.quarantined.increment(by: 1 + cascade.dependents.count)
        warnQuarantined(entry, failure)
        publish(.quarantined(entry.id, failure: failure))
        publishCascade(cascade, cause: .quarantined(entry.id))
    }

    /// One warning per quarantined entry, naming the request: what a
    /// developer needs to find the route or the payload at fault.
    func warnQuarantined(_ entry: OutboxEntry, _ failure: OutboxFailure) {
        logger.warning("quarantined \(entry.method) \(entry.endpoint): \(failure)", metadata: metadata(entry, failure))
    }

    func metadata(_ entry: OutboxEntry, _ failure: OutboxFailure) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "id": "\(entry.id)", "type": "\(entry.type)", "method": "\(entry.method)", "endpoint": "\(entry.endpoint)",
            "cause": "\(failure.cause.name)", "reason": "\(failure)",
        ]
        if let httpStatus = failure.httpStatus { metadata["status"] = "\(httpStatus)" }
        return metadata
    }

    /// The delay of the n-th not-sent or interrupted attempt in a row.
    func nextDelay(for id: OutboxEntry.ID, using backoff: OutboxBackoff) -> Duration {
        let streak = runs.withLock { runs -> Int in
            runs.streaks[id, default: 0] += 1
            return runs.streaks[id]!
        }
        return jitter.withLock { backoff.delay(afterAttempt: streak, using: &$0) }
    }

    /// A server's `Retry-After`, within the configured floor and cap.
    func clampRetryAfter(_ wait: Duration) -> Duration {
        min(max(wait, configuration.retryAfterFloor), max(configuration.retryAfterFloor, configuration.retryAfterCap))
    }

    /// One `.quarantined` event per dependent, with the cause its entry
    /// records (`cause`, from a store that gives none).
    func publishCascade(_ cascade: OutboxCascade, cause: OutboxDependencyFailure) {
        for dependent in cascade.dependents {
            publish(.quarantined(dependent, failure: OutboxFailure(.dependency(cascade.causes[dependent] ?? cause))))
        }
    }
}
