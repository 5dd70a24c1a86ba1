import Foundation
import OutboxLocking

/// One delivery attempt in a drain: its task, and who ended it — the
/// attempt itself (its handler returned) or, first, the watchdog or a stop
/// (``expire()``). Exactly one of the two wins; the loser changes nothing.
///
/// The handler runs in the attempt's own task, not in a task of its own:
/// when the watchdog wins, it cancels that task and gives up on it without
/// waiting (a handler may ignore cancellation), and the entry's next
/// attempt waits for it to end (``AbandonedDeliveries``).
final class RunningAttempt: Sendable {
    let entry: OutboxEntry
    let handler: any OutboxHandler
    private struct State {
        var ended = false
        var task: Task<Void, Never>?
        var watch: UInt64?
        /// The handler was called at this time (its outcome is unknown if the watchdog wins).
        var sentAt: Date?
        /// Set when expired before its task was tracked.
        var expiredEarly = false
    }
    private let state = Locked(State())

    init(entry: OutboxEntry, handler: any OutboxHandler) {
        self.entry = entry
        self.handler = handler
    }

    /// The task running the attempt; if the attempt was ended before (a
    /// stop), it is cancelled now — it sends nothing (``sending(at:watch:)``).
    func track(_ task: Task<Void, Never>) {
        let expired = state.withLock { state -> Bool in
            state.task = task
            return state.expiredEarly
        }
        if expired { task.cancel() }
    }

    /// The handler is about to be called, watched by the watchdog under `watch`.
    func sending(at time: Date, watch: UInt64) -> Bool {
        state.withLock { state -> Bool in
            guard !state.ended else { return false }
            state.sentAt = time
            state.watch = watch
            return true
        }
    }

    /// The attempt ended on its own. `false` if the watchdog or a stop ended
    /// it first (its outcome is then theirs to record). Returns the watch
    /// to stop.
    func finish() -> (won: Bool, watch: UInt64?) {
        state.withLock { state -> (Bool, UInt64?) in
            guard !state.ended else { return (false, nil) }
            state.ended = true
            return (true, state.watch)
        }
    }

    /// Ends the attempt from outside if it has not ended: cancels its task
    /// and returns it (to remember as possibly still running) with when the
    /// handler was called, if it was; `nil` if the attempt ended first.
    func expire() -> (task: Task<Void, Never>?, sentAt: Date?)? {
        let expired = state.withLock { state -> (Task<Void, Never>?, Date?)? in
            guard !state.ended else { return nil }
            state.ended = true
            if state.task == nil { state.expiredEarly = true }
            return (state.task, state.sentAt)
        }
        expired?.0?.cancel()
        return expired
    }
}

/// Where a drain's attempts report as they end, and the drain loop collects.
/// Successes wait here to be recorded together, in one store write.
final class AttemptInbox: Sendable {
    struct Delivered: Sendable {
        var attempt: RunningAttempt
        var serverID: String?
        var replayed: Bool
    }

    struct Contents {
        /// Attempts that ended, with what they recorded themselves.
        var ended: [RunningAttempt] = []
        var report = OutboxFlushReport()
        /// Deliveries whose success the loop records.
        var delivered: [Delivered] = []
    }

    private struct State {
        var contents = Contents()
        /// Attempts started and not ended, by entry.
        var running: [OutboxEntry.ID: RunningAttempt] = [:]
    }

    let wakeup: Wakeup
    private let state = Locked(State())

    init(wakeup: Wakeup) { self.wakeup = wakeup }

    func started(_ attempt: RunningAttempt) { state.withLock { $0.running[attempt.entry.id] = attempt } }

    /// The attempt ended; `report` is what it recorded.
    func ended(_ attempt: RunningAttempt, report: OutboxFlushReport) {
        state.withLock { state in
            state.running[attempt.entry.id] = nil
            state.contents.ended.append(attempt)
            state.contents.report.add(report)
        }
        wakeup.signal()
    }

    /// The attempt was delivered: its slot is freed once the loop has recorded it.
    func delivered(_ delivery: Delivered) {
        state.withLock { state in
            state.running[delivery.attempt.entry.id] = nil
            state.contents.delivered.append(delivery)
        }
        wakeup.signal()
    }

    func take() -> Contents {
        state.withLock { state in
            defer { state.contents = Contents() }
            return state.contents
        }
    }

    /// Every attempt still running (a stop ends them).
    var running: [RunningAttempt] { state.withLock { Array($0.running.values) } }
}
