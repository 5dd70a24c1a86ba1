import Foundation
import Logging
import OutboxLocking
import OutboxStorage
import OutboxModel

/// One drain pass: the loop that keeps every delivery slot busy.
extension OutboxDispatcher {
    /// One pass: keeps up to `maximumConcurrentDeliveries` attempts running.
    /// It claims due entries whenever a slot is free and something may have
    /// become due — an attempt ended, an enqueue or a flush woke it, the next
    /// retry time came — and ends when nothing runs and nothing is due. A
    /// claim puts its entries in flight in one write, so an entry is never
    /// handed to two attempts. Cancelling the pass (``stop()``) ends the
    /// running attempts; each still records its outcome.
    ///
    /// The loop runs off the dispatcher's actor (it reads the actor's
    /// switches through ``DispatcherSwitches``), so its store calls cost no hop
    /// onto the actor. Each slot is a worker task that runs attempt after
    /// attempt (``DeliveryAttempts/startWorker(inbox:switches:)``) on entries
    /// the loop claimed ahead: as many as the workers are expected to start
    /// well within their lease (``lookahead(maximumConcurrent:attempts:handlerTime:)``),
    /// so one claim — one write, one read of the bodies — serves many
    /// attempts. The successes of the attempts that ended since the loop last
    /// looked are recorded together, in one write, before more is claimed.
    nonisolated func drainPass(wakeup: Wakeup) async -> OutboxFlushReport {
        var report = OutboxFlushReport()
        let lease = configuration.deliveryTimeout + configuration.leaseGrace
        let slots = configuration.maximumConcurrentDeliveries
        let inbox = AttemptInbox(wakeup: wakeup)
        var lookahead = 0
        var timed = (attempts: 0, time: Duration.zero)
        var storeFailed = false
        var dueAlarm: (task: Task<Void, Never>, at: Date)?
        defer { dueAlarm?.task.cancel() }
        await withTaskCancellationHandler {
            while true {
                let contents = inbox.take()
                report.add(contents.report)
                if !contents.delivered.isEmpty { report.add(await attempts.recordDeliveries(contents.delivered)) }
                if contents.timed > 0 {
                    timed = (timed.attempts + contents.timed, timed.time + contents.handlerTime)
                    lookahead = Self.lookahead(
                        maximumConcurrent: slots, attempts: timed.attempts, handlerTime: timed.time,
                        leaseGrace: configuration.leaseGrace)
                    inbox.setLookahead(lookahead)
                }
                let claiming = !storeFailed && switches.mayClaim(clock) && !Task.isCancelled
                var claimedAny = false
                let claimedAt = clock.now()
                if claiming {
                    let before = inbox.occupancy
                    let wanted = slots + lookahead - before.workers - before.queued
                    // Claim when a slot is free, or when the queue ahead of
                    // the workers is down to half.
                    if wanted > 0 && (before.workers < slots && before.queued == 0 || wanted >= max(1, lookahead / 2)) {
                        do throws(OutboxError) {
                            claimedAny =
                                try await claim(upTo: wanted, at: claimedAt, lease: lease, inbox: inbox, into: &report) > 0
                        } catch {
                            // Let the running attempts finish and record their outcomes.
                            storeFailed = true
                            publish(.storeFailed(nil, error: error))
                            report.errors.append(error)
                            logger.error("cannot claim due entries", metadata: ["error": "\(error)"])
                        }
                    }
                    let after = inbox.occupancy
                    for _ in 0..<max(0, min(slots - after.workers, after.queued)) {
                        attempts.startWorker(inbox: inbox, switches: switches)
                    }
                } else {
                    // Nothing may start now (paused, offline, past the
                    // deadline, stopping): what was claimed ahead goes back.
                    for queued in inbox.takeQueued() { report.add(await attempts.giveBack(queued.entry, reason: Self.notStarted)) }
                }
                // Stopped while claiming: end what was just started too.
                if Task.isCancelled { stopAttempts(inbox) }
                if inbox.isIdle && !claimedAny {
                    // Results the last workers left behind come first.
                    let last = inbox.take()
                    report.add(last.report)
                    if !last.delivered.isEmpty { report.add(await attempts.recordDeliveries(last.delivered)); continue }
                    if last.results > 0 { continue }
                    break
                }
                if claiming, inbox.workers < slots { await armDueAlarm(&dueAlarm, claimedAt: claimedAt, wakeup: wakeup) }
                await wakeup.wait()
                if let alarm = dueAlarm, alarm.at <= clock.now() { dueAlarm = nil }
            }
        } onCancel: {
            stopAttempts(inbox)
            wakeup.signal()
        }
        return report
    }

    /// With free slots, wakes the loop when the next retry comes due. One
    /// due at the claim's time was claimed, or cannot be (its dependency or
    /// scope waits; one recorded since then comes with its attempt's own
    /// wake-up): no alarm for it, so no spin. One that came due after the
    /// claim's time — even if that is already past by now — gets its alarm,
    /// which then rings at once: measured against the clock's `now`
    /// instead, a retry due in that window would wait for the next attempt
    /// to end with a slot left idle.
    private nonisolated func armDueAlarm(
        _ alarm: inout (task: Task<Void, Never>, at: Date)?, claimedAt: Date, wakeup: Wakeup
    ) async {
        guard let next = try? await store.nextDueDate(), next > claimedAt, alarm.map({ next < $0.at }) ?? true else { return }
        alarm?.task.cancel()
        let clock = self.clock
        alarm = (Task {
            do { try await clock.sleep(until: next) } catch { return }
            wakeup.signal()
        }, next)
    }

    private static let notStarted = "claimed ahead, then the dispatcher stopped starting attempts"

    /// How many entries to claim ahead of the workers: none until attempts
    /// have been timed; then as many as keep a queued entry's wait under an
    /// eighth of `leaseGrace` at the handlers' mean time (its lease runs
    /// from the claim), at most 64.
    static func lookahead(maximumConcurrent: Int, attempts: Int, handlerTime: Duration, leaseGrace: Duration) -> Int {
        guard attempts > 0 else { return 0 }
        let mean = handlerTime / attempts
        guard mean > .zero else { return 64 }
        let rounds = (leaseGrace / 8) / mean
        return Int(min(64, max(0, rounds.rounded(.down) * Double(maximumConcurrent))))
    }

    /// Claims up to `limit` due entries for the workers; returns how many.
    private nonisolated func claim(
        upTo limit: Int, at now: Date, lease: Duration, inbox: AttemptInbox, into report: inout OutboxFlushReport
    ) async throws(OutboxError) -> Int {
        let handlers = self.handlers
        let hasFallback = fallback != nil
        let claim = try await store.claimDue(at: now, limit: limit, lease: lease) { type in
            hasFallback || handlers[type] != nil
        }
        if !claim.unaccepted.isEmpty {
            let fresh = attempts.reportedUnhandled.withLock { reported in
                claim.unaccepted.filter { reported.insert($0.key).inserted }
            }
            for (id, type) in fresh {
                report.unhandled += 1
                publish(.unhandled(id, type: type))
                logger.warning("no handler for entry type", metadata: ["type": "\(type)", "id": "\(id)"])
            }
        }
        var queued: [AttemptInbox.Queued] = []
        queued.reserveCapacity(claim.entries.count)
        for entry in claim.entries {
            guard let handler = handlers[entry.type] ?? fallback else { continue }  // accepted above
            queued.append(AttemptInbox.Queued(entry: entry, handler: handler, claimedAt: now))
        }
        inbox.enqueue(queued)
        return queued.count
    }

    /// The pass is being cancelled: workers take nothing more (the loop
    /// gives back what was claimed ahead), and every running attempt ends
    /// (recorded as interrupted, or as not sent if its handler was not called).
    private nonisolated func stopAttempts(_ inbox: AttemptInbox) {
        for worker in inbox.close() { attempts.expire(worker, nil, inbox: inbox, reason: .stopped) }
    }

    /// Puts entries whose lease expired back in the queue, at most once per
    /// `leaseGrace`: an attempt that could not record its outcome (its store
    /// write failed) does not hold its entry until the next open.
    func reclaimExpiredLeases() async {
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
            publish(.storeFailed(nil, error: error))
            logger.error("cannot reclaim expired leases", metadata: ["error": "\(error)"])
        }
    }
}
