import DequeModule
import Foundation
import OutboxLocking
import OutboxStorage
import OutboxModel

/// One of a drain's delivery slots: a task that runs attempt after attempt
/// on the entries the drain loop claimed ahead (``AttemptInbox``), without a
/// task, a thread hand-off or a word with the loop per entry.
///
/// Each attempt is ended exactly once: by the worker (its handler returned)
/// or, first, by the watchdog or a stop (``expire(_:)``) — the loser changes
/// nothing. The handler runs in the worker's own task: when the watchdog
/// wins, it cancels that task and gives up on it without waiting (a handler
/// may ignore cancellation); the worker is then *abandoned* — it leaves its
/// slot, which the loop fills with a new worker — and the entry's next
/// attempt waits for it to end (``AbandonedDeliveries``).
final class DeliveryWorker: Sendable {
    /// The attempt a worker is running.
    struct Attempt {
        var entry: OutboxEntry
        var handler: any OutboxHandler
        /// Which of the worker's attempts this is.
        var number: UInt64
        /// When the handler was called, if it was (its outcome is unknown if the watchdog wins).
        var sentAt: Date?
        var watch: UInt64?
        var ended = false
    }

    private struct State {
        var task: Task<Void, Never>?
        var attempts: UInt64 = 0
        var current: Attempt?
        /// Ended from outside before its task was known: cancel it when it is.
        var expiredEarly = false
    }

    let id: UInt64
    private let state = Locked(State())

    init(id: UInt64) { self.id = id }

    func track(_ task: Task<Void, Never>) {
        let expired = state.withLock { state -> Bool in
            state.task = task
            return state.expiredEarly
        }
        if expired { task.cancel() }
    }

    /// Starts an attempt on `entry`; returns its number.
    func begin(_ entry: OutboxEntry, handler: any OutboxHandler) -> UInt64 {
        state.withLock { state in
            state.attempts += 1
            state.current = Attempt(entry: entry, handler: handler, number: state.attempts)
            return state.attempts
        }
    }

    /// The handler is about to be called under the watchdog's `watch`;
    /// `false` if the attempt was ended first (a stop): then nothing is sent.
    func sending(_ number: UInt64, at time: Date, watch: UInt64) -> Bool {
        state.withLock { state -> Bool in
            guard var current = state.current, current.number == number, !current.ended else { return false }
            current.sentAt = time
            current.watch = watch
            state.current = current
            return true
        }
    }

    /// The worker ends attempt `number` itself: `false` if the watchdog or a
    /// stop ended it first (its outcome is then theirs to record).
    func finish(_ number: UInt64) -> Bool {
        state.withLock { state -> Bool in
            guard var current = state.current, current.number == number, !current.ended else { return false }
            current.ended = true
            state.current = current
            return true
        }
    }

    /// Ends the running attempt (`number`, or whichever runs if `nil`) from
    /// outside, unless it ended first: cancels the worker's task and returns
    /// it with the attempt. The worker is abandoned from then on.
    func expire(_ number: UInt64?) -> (task: Task<Void, Never>?, attempt: Attempt)? {
        let expired = state.withLock { state -> (Task<Void, Never>?, Attempt)? in
            guard var current = state.current, !current.ended, number.map({ $0 == current.number }) ?? true else {
                return nil
            }
            current.ended = true
            state.current = current
            if state.task == nil { state.expiredEarly = true }
            return (state.task, current)
        }
        expired?.0?.cancel()
        return expired
    }
}

/// What a drain's workers and its loop share: the entries claimed ahead and
/// not started, the workers holding slots, and what ended attempts left for
/// the loop — successes wait here to be recorded together, in one store write.
final class AttemptInbox: Sendable {
    struct Queued: Sendable {
        var entry: OutboxEntry
        var handler: any OutboxHandler
        var claimedAt: Date
    }

    struct Delivered: Sendable {
        var id: OutboxEntry.ID
        var serverID: String?
        var replayed: Bool
    }

    struct Contents {
        var report = OutboxFlushReport()
        /// Deliveries whose success the loop records.
        var delivered: [Delivered] = []
        /// Attempts that ended since the loop last looked.
        var results = 0
        /// Of those, the ones whose handler ran, and its time in all.
        var timed = 0
        var handlerTime = Duration.zero
    }

    private struct State {
        var contents = Contents()
        var queue: Deque<Queued> = []
        /// Workers holding a slot (an abandoned one no longer does).
        var workers: [UInt64: DeliveryWorker] = [:]
        var nextWorkerID: UInt64 = 0
        /// Workers wake the loop when this many results wait, or when the
        /// queue is down to `refillMark` entries (see ``setLookahead(_:)``).
        var resultBatch = 1
        var refillMark = 0
        /// The drain is stopping: workers take nothing more.
        var closed = false
        /// Attempts ended from outside whose outcome is still being recorded.
        var recording = 0
    }

    let wakeup: Wakeup
    private let state = Locked(State())

    init(wakeup: Wakeup) { self.wakeup = wakeup }

    /// Claimed entries for the workers, in order.
    func enqueue(_ entries: [Queued]) { state.withLock { $0.queue.append(contentsOf: entries) } }

    var workers: Int { state.withLock { $0.workers.count } }
    /// Workers running and entries queued for them, read together.
    var occupancy: (workers: Int, queued: Int) { state.withLock { ($0.workers.count, $0.queue.count) } }
    /// Nothing runs, nothing is queued, no outcome is still being recorded.
    var isIdle: Bool { state.withLock { $0.workers.isEmpty && $0.queue.isEmpty && $0.recording == 0 } }

    /// A new worker holding a slot.
    func addWorker() -> DeliveryWorker {
        state.withLock { state in
            state.nextWorkerID += 1
            let worker = DeliveryWorker(id: state.nextWorkerID)
            state.workers[worker.id] = worker
            return worker
        }
    }

    /// The next entry for `worker`, or `nil`: nothing queued, the drain is
    /// stopping or `mayStart` says no, or the worker was abandoned. A worker
    /// that gets `nil` has left its slot (the loop is woken).
    func next(for worker: DeliveryWorker, mayStart: () -> Bool) -> Queued? {
        let next = state.withLock { state -> Queued? in
            guard state.workers[worker.id] != nil else { return nil }
            if !state.closed, mayStart(), let next = state.queue.popFirst() { return next }
            state.workers[worker.id] = nil
            return nil
        }
        if next == nil { wakeup.signal() }
        return next
    }

    /// The worker's attempt was ended from outside: it leaves its slot, and
    /// the drain waits for the attempt's outcome to be recorded
    /// (``ended(report:delivered:handlerTime:afterExpiry:)`` with `afterExpiry`).
    func abandon(_ worker: DeliveryWorker) {
        state.withLock { state in
            state.workers[worker.id] = nil
            state.recording += 1
        }
        wakeup.signal()
    }

    /// An attempt ended; `report` is what it recorded, `delivered` the
    /// success left for the loop to record, `handlerTime` its handler's time.
    func ended(
        report: OutboxFlushReport, delivered: Delivered? = nil, handlerTime: Duration? = nil, afterExpiry: Bool = false
    ) {
        let wake = state.withLock { state -> Bool in
            state.contents.report.add(report)
            if afterExpiry {
                state.recording -= 1
                state.contents.results += 1
                return true
            }
            if let delivered { state.contents.delivered.append(delivered) }
            state.contents.results += 1
            if let handlerTime {
                state.contents.timed += 1
                state.contents.handlerTime += handlerTime
            }
            return state.contents.results >= state.resultBatch || state.queue.count <= state.refillMark
        }
        if wake { wakeup.signal() }
    }

    /// How many entries the loop keeps claimed ahead of the workers.
    func setLookahead(_ lookahead: Int) {
        state.withLock { state in
            state.resultBatch = max(1, lookahead / 2)
            state.refillMark = lookahead / 2
        }
    }

    func take() -> Contents {
        state.withLock { state in
            defer { state.contents = Contents() }
            return state.contents
        }
    }

    /// Stops every worker from taking more (what is queued stays for the
    /// loop to give back); returns the workers, whose running attempts a
    /// stop ends.
    func close() -> [DeliveryWorker] {
        state.withLock { state in
            state.closed = true
            return Array(state.workers.values)
        }
    }

    /// Takes back what is queued (nothing may start now).
    func takeQueued() -> [Queued] {
        state.withLock { state in
            defer { state.queue.removeAll() }
            return Array(state.queue)
        }
    }
}
