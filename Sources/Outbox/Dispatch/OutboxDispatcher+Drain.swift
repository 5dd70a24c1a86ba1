import Foundation
import Logging
import OutboxLocking

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
    /// switches through ``DrainControl``), so its store calls and wake-ups
    /// cost no hop onto the actor. Each attempt runs in one task of its own
    /// (``DeliveryAttempts/start(_:with:inbox:)``); the successes of the
    /// attempts that ended since the loop last looked are recorded together,
    /// in one write, before their slots are refilled.
    nonisolated func drainPass(wakeup: Wakeup) async -> OutboxFlushReport {
        var report = OutboxFlushReport()
        let lease = configuration.deliveryTimeout + configuration.leaseGrace
        let inbox = AttemptInbox(wakeup: wakeup)
        var running = 0
        var storeFailed = false
        var dueAlarm: (task: Task<Void, Never>, at: Date)?
        defer { dueAlarm?.task.cancel() }
        await withTaskCancellationHandler {
            while true {
                running -= await collect(inbox, into: &report)
                var claimedAny = false
                let claiming = !storeFailed && control.mayClaim(clock) && !Task.isCancelled
                let capacity = configuration.maximumConcurrentDeliveries - running
                if claiming && capacity > 0 {
                    do {
                        let started = try await claim(upTo: capacity, lease: lease, inbox: inbox, into: &report)
                        running += started
                        claimedAny = started > 0
                    } catch {
                        // Let the running attempts finish and record their outcomes.
                        storeFailed = true
                        report.errors.append("claimDue: \(error)")
                        logger.error("cannot claim due entries", metadata: ["error": "\(error)"])
                    }
                    // Stopped while claiming: end what was just started too.
                    if Task.isCancelled { stopAttempts(inbox) }
                }
                if running == 0 && !claimedAny { break }
                // Free slots: also wake when the next retry comes due. (One
                // due now was claimed above, or went to its dependency's
                // wait list; one recorded since then comes with its
                // attempt's own wake-up. So no alarm for the past: no spin.)
                if claiming, running < configuration.maximumConcurrentDeliveries,
                    let next = try? await store.nextDueDate(), next > clock.now(), dueAlarm.map({ next < $0.at }) ?? true
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
        } onCancel: {
            stopAttempts(inbox)
        }
        return report
    }

    /// Takes what the attempts reported since the last look — recording
    /// their successes in one batch — and returns how many slots they free.
    private nonisolated func collect(_ inbox: AttemptInbox, into report: inout OutboxFlushReport) async -> Int {
        let contents = inbox.take()
        report.add(contents.report)
        guard !contents.delivered.isEmpty else { return contents.ended.count }
        report.add(await attempts.recordDeliveries(contents.delivered))
        return contents.ended.count + contents.delivered.count
    }

    /// Claims up to `limit` due entries and starts an attempt on each;
    /// returns how many started.
    private nonisolated func claim(
        upTo limit: Int, lease: Duration, inbox: AttemptInbox, into report: inout OutboxFlushReport
    ) async throws(OutboxError) -> Int {
        let handlers = self.handlers
        let hasFallback = fallback != nil
        let claim = try await store.claimDue(at: clock.now(), limit: limit, lease: lease) { type in
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
        var started = 0
        for entry in claim.entries {
            guard let handler = handlers[entry.type] ?? fallback else { continue }  // accepted above
            attempts.start(entry, with: handler, inbox: inbox)
            started += 1
        }
        return started
    }

    /// Ends every running attempt of the pass (it is being cancelled): each
    /// is recorded as interrupted, or as not sent if its handler was not called.
    private nonisolated func stopAttempts(_ inbox: AttemptInbox) {
        for attempt in inbox.running { attempts.expire(attempt, inbox: inbox, reason: .stopped) }
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
            logger.error("cannot reclaim expired leases", metadata: ["error": "\(error)"])
        }
    }
}

/// The dispatcher's switches, as the drain loop reads them off the actor:
/// whether attempts may start now.
final class DrainControl: Sendable {
    struct Switches {
        var paused = false
        var online = true
        var stopped = false
        /// While ``OutboxDispatcher/drain(until:)`` runs: no attempt starts after this.
        var claimDeadline: Date?
    }

    let switches = Locked(Switches())

    func mayClaim(_ clock: any OutboxClock) -> Bool {
        let switches = switches.withLock { $0 }
        guard !switches.paused, switches.online, !switches.stopped else { return false }
        return switches.claimDeadline.map { clock.now() < $0 } ?? true
    }
}
