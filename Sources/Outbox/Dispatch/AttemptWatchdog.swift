import Foundation
import OutboxLocking

/// The dispatcher's one delivery watchdog: every running attempt registers
/// its deadline here, and a single timer task sleeps until the earliest one.
///
/// A timer task per attempt cost a task, a sleep and a cancellation per
/// delivery; here an attempt costs a lock to register and one to leave.
/// Deadlines are mostly registered in increasing order (now + the delivery
/// timeout), so the timer rarely moves. When it wakes with nothing left to
/// watch it ends, and ``shutdown()`` (the dispatcher going away) cancels it,
/// so nothing stays asleep on the clock after the dispatcher.
final class AttemptWatchdog: Sendable {
    private struct Watch {
        var deadline: Date
        var expire: @Sendable () -> Void
    }

    private struct State {
        var watches: [UInt64: Watch] = [:]
        var nextID: UInt64 = 0
        /// The timer task, which one it is, and the deadline it sleeps until.
        var timer: (task: Task<Void, Never>, generation: UInt64, deadline: Date)?
        var generation: UInt64 = 0
    }

    private let clock: any OutboxClock
    private let state = Locked(State())

    init(clock: any OutboxClock) { self.clock = clock }

    /// Calls `expire` once at `deadline` unless ``unwatch(_:)`` comes first.
    func watch(until deadline: Date, _ expire: @escaping @Sendable () -> Void) -> UInt64 {
        let (id, replaced) = state.withLock { state -> (UInt64, Task<Void, Never>?) in
            state.nextID += 1
            state.watches[state.nextID] = Watch(deadline: deadline, expire: expire)
            if let timer = state.timer, timer.deadline <= deadline { return (state.nextID, nil) }
            let replaced = state.timer?.task
            state.generation += 1
            state.timer = (startTimer(until: deadline, generation: state.generation), state.generation, deadline)
            return (state.nextID, replaced)
        }
        replaced?.cancel()
        return id
    }

    /// Stops watching. The timer keeps sleeping until its deadline even
    /// when nothing is left to watch (then it ends): stopping and starting
    /// it around every short attempt would cost a task each time.
    func unwatch(_ id: UInt64) {
        state.withLock { _ = $0.watches.removeValue(forKey: id) }
    }

    /// Cancels the timer (the dispatcher is gone); watches never fire.
    func shutdown() {
        let timer = state.withLock { state -> Task<Void, Never>? in
            state.watches.removeAll()
            defer { state.timer = nil }
            return state.timer?.task
        }
        timer?.cancel()
    }

    private func startTimer(until deadline: Date, generation: UInt64) -> Task<Void, Never> {
        let clock = self.clock
        return Task { [weak self] in
            var next = deadline
            while true {
                do { try await clock.sleep(until: next) } catch { return }
                guard let self, let following = self.fire(generation: generation) else { return }
                next = following
            }
        }
    }

    /// Expires every watch whose deadline has come; returns the next
    /// deadline to sleep until, or `nil` (the timer ends: nothing is
    /// watched, or a newer timer replaced this one).
    private func fire(generation: UInt64) -> Date? {
        let now = clock.now()
        let (expired, next) = state.withLock { state -> ([Watch], Date?) in
            guard state.timer?.generation == generation else { return ([], nil) }
            var expired: [Watch] = []
            for (id, watch) in state.watches where watch.deadline <= now {
                expired.append(watch)
                state.watches[id] = nil
            }
            guard let next = state.watches.values.lazy.map(\.deadline).min() else {
                state.timer = nil
                return (expired, nil)
            }
            state.timer?.deadline = next
            return (expired, next)
        }
        for watch in expired.sorted(by: { $0.deadline < $1.deadline }) { watch.expire() }
        return next
    }
}
