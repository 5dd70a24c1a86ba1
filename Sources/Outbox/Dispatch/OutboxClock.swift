import Foundation
import OutboxLocking

/// The dispatcher's notion of time: when things are due, how long a
/// delivery may take, when to wake up. Injected so tests never sleep
/// through a real backoff.
public protocol OutboxClock: Sendable {
    func now() -> Date
    /// Returns at `deadline` (or at once if it has passed); throws
    /// `CancellationError` if the task is cancelled first.
    func sleep(until deadline: Date) async throws
}

/// Wall-clock time.
public struct SystemOutboxClock: OutboxClock {
    public init() {}
    public func now() -> Date { Date() }
    public func sleep(until deadline: Date) async throws {
        let interval = deadline.timeIntervalSinceNow
        if interval > 0 { try await Task.sleep(for: .milliseconds(Int64((interval * 1000).rounded(.up)))) }
        try Task.checkCancellation()
    }
}

/// A clock that only moves when told to: sleepers wake when ``advance(by:)``
/// or ``set(to:)`` passes their deadline. For tests of backoff, timers and
/// delivery timeouts, without waiting.
public final class ManualOutboxClock: OutboxClock {
    private struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
    }

    private let state: Locked<State>

    public init(now: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Locked(State(now: now))
    }

    public func now() -> Date { state.withLock { $0.now } }

    /// How many tasks are asleep on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline anyone sleeps until.
    public var nextDeadline: Date? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }

    public func sleep(until deadline: Date) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    if deadline <= state.now || Task.isCancelled { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves time forward, waking every sleeper whose deadline is reached.
    public func advance(by interval: Duration) {
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        set(to: now().addingTimeInterval(seconds))
    }

    /// Sets the time (never backwards), waking sleepers whose deadline is reached.
    public func set(to date: Date) {
        let woken = state.withLock { state -> [Sleeper] in
            state.now = max(state.now, date)
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in woken { sleeper.continuation.resume() }
    }
}

extension Date {
    func adding(_ duration: Duration) -> Date {
        addingTimeInterval(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}
