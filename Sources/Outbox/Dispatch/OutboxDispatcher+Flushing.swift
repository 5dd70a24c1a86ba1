import Foundation
import Logging
import OutboxStorage
import OutboxModel

/// Draining on request (`flush`, `drain(until:)`) and by itself: the one
/// running drain that callers join, its wake-ups, the retry timer and pruning.
extension OutboxDispatcher {
    /// Sends everything that is due, until nothing is; returns what it did.
    /// Concurrent callers join the running drain instead of starting another
    /// (and wake it, so it claims what became due). If the calling task is
    /// cancelled, returns at once with what is known (an empty report when it
    /// joined a drain): the drain goes on for the dispatcher's other triggers.
    @discardableResult
    public func flush() async -> OutboxFlushReport {
        if let refused = refusedForConfiguration() { return refused }
        startSnapshots()
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
    /// ``queueState()`` and ``/OutboxStorage/OutboxStore/entries(matching:)`` tell what is
    /// left and why. It also returns early when nothing left can come due by
    /// itself, and after ``stop()``.
    @discardableResult
    public func drain(until deadline: Date) async -> OutboxFlushReport {
        if let refused = refusedForConfiguration() { return refused }
        startSnapshots()
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

    func drainUntilDeadline(_ cutoff: Date) async {
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
    func interruptRunningDrain() {
        running?.task.cancel()
        for sleeper in sleepers { sleeper.signal() }
    }


    /// A report of the configuration error, when there is one: a dispatcher
    /// with an unusable configuration sends nothing.
    func refusedForConfiguration() -> OutboxFlushReport? {
        guard let configurationError else { return nil }
        var report = OutboxFlushReport()
        report.errors.append(configurationError)
        return report
    }

    /// A flush in the background that nobody waits for (every enqueue,
    /// retry, resume…): wakes the running drain, or starts one. No task
    /// of its own.
    func poke() {
        guard configurationError == nil else { return }
        _ = drainTask()
    }

    /// The running drain, or a new one.
    func drainTask() -> Task<OutboxFlushReport, Never> {
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
    func sleep(until date: Date) async {
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


    func drainUntilQuiet(wakeup: Wakeup) async -> OutboxFlushReport {
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
        noteProgress(report)
        await checkStall()
        await scheduleTimer()
        feed.publishQueueChange()
        return report
    }

    /// Whether a drain may start attempts now.
    var mayClaim: Bool {
        switches.mayClaim(clock) && !Task.isCancelled
    }

    /// Drops succeeded entries past their audit window and stale mappings,
    /// at most once per `pruneInterval`.
    func pruneIfDue() async {
        let now = clock.now()
        if let lastPrune, now < lastPrune.adding(configuration.pruneInterval) { return }
        lastPrune = now
        await removeExpiredQuarantined(at: now)
        do { try await store.prune(at: now) } catch {
            publish(.storeFailed(nil, error: error))
            logger.error("cannot prune the outbox", metadata: ["error": "\(error)"])
        }
    }

    /// The dispatcher's one timer: until the next retry comes due (when it
    /// may send) or the stall deadline, whichever is first.
    func scheduleTimer() async {
        var due = switches.current.maySend ? try? await store.nextDueDate() : nil
        if let stall = stallDeadline { due = min(due ?? stall, stall) }
        guard let next = due else { return }
        if let timer, timer.deadline <= next { return }
        timer?.task.cancel()
        let clock = self.clock
        let task = Task { [weak self] in
            do { try await clock.sleep(until: next) } catch { return }
            await self?.timerFired()
        }
        timer = (task, next)
    }

    func timerFired() async {
        timer = nil
        await checkStall()
        await flush()
    }
}
