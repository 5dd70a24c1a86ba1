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
    /// handed to two attempts. Cancelling the pass (``stop()``) cancels the
    /// running attempts; each still records its outcome.
    func drain(wakeup: Wakeup) async -> OutboxFlushReport {
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
                let claimedAt = clock.now()
                if claiming && capacity > 0 {
                    do {
                        let claim = try await store.claimDue(at: claimedAt, limit: capacity, lease: lease) { type in
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
                        publish(.storeFailed(nil, error: (error as? OutboxError) ?? OutboxError(.storage, "\(error)")))
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
                // Free slots: also wake when the next retry comes due. One
                // due at the claim's time was claimed above, or cannot be
                // (its dependency or scope waits; one recorded since then
                // comes with its attempt's own wake-up): no alarm for it,
                // so no spin. One that came due after the claim's time —
                // even if that is already past by now — gets its alarm,
                // which then rings at once: measured against the clock's
                // `now` instead, a retry due in that window would wait
                // for the next attempt to end with a slot left idle.
                if running < configuration.maximumConcurrentDeliveries,
                    let next = try? await store.nextDueDate(), next > claimedAt, dueAlarm.map({ next < $0.at }) ?? true
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

/// How many attempts of a drain have ended (shared with the attempt tasks).
final class FinishedAttempts: Sendable {
    let count = Locked(0)
}
