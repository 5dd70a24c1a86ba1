import Foundation
import OutboxLocking

/// Runs work against a deadline kept by the dispatcher's ``AttemptWatchdog``,
/// and gives up on the work — cancelling it, but not waiting for it — when
/// the deadline comes first, or when the waiting task is cancelled. (A task
/// group would wait for a handler that ignores cancellation; a delivery
/// watchdog must not.) Used for the rare waits beside a delivery (an earlier
/// handler still running, a resend after a conflict); deliveries themselves
/// race the watchdog without a task of their own (``DeliveryAttempts``).
enum DeadlineRace {
    enum Outcome<Value: Sendable>: Sendable {
        case finished(Result<Value, any Error>)
        /// The deadline came first. `abandoned` is the cancelled work, which
        /// may still be running if it ignores cancellation: await it before
        /// starting the same work again.
        case timedOut(abandoned: Task<Void, Never>)
        /// The waiting task was cancelled first; the work was cancelled and
        /// may still be running, as with ``timedOut(abandoned:)``.
        case cancelled(abandoned: Task<Void, Never>)
    }

    private final class Race<Value: Sendable>: Sendable {
        struct State {
            var continuation: CheckedContinuation<Outcome<Value>, Never>?
            var worker: Task<Void, Never>?
            var watch: UInt64?
            var done = false
            var cancelled = false
        }

        let state = Locked(State())

        /// Resumes the waiter once; cancels the work if it lost, and stops
        /// the watch if the work won.
        func finish(_ outcome: Outcome<Value>, watchdog: AttemptWatchdog) {
            let (continuation, loser, watch) = state.withLock {
                state -> (CheckedContinuation<Outcome<Value>, Never>?, Task<Void, Never>?, UInt64?) in
                guard !state.done else { return (nil, nil, nil) }
                state.done = true
                defer { state.continuation = nil }
                switch outcome {
                case .timedOut(let worker): return (state.continuation, worker, nil)
                case .cancelled(let worker): return (state.continuation, worker, state.watch)
                case .finished: return (state.continuation, nil, state.watch)
                }
            }
            if let watch { watchdog.unwatch(watch) }
            loser?.cancel()
            continuation?.resume(returning: outcome)
        }

        /// The waiter was cancelled: give up on the work (once it is tracked).
        func cancel(watchdog: AttemptWatchdog) {
            let worker = state.withLock { state -> Task<Void, Never>? in
                state.cancelled = true
                return state.worker
            }
            if let worker { finish(.cancelled(abandoned: worker), watchdog: watchdog) }
        }

        /// Records the work and its watch; if the race is already over,
        /// stops the watch.
        func track(worker: Task<Void, Never>, watch: UInt64, watchdog: AttemptWatchdog) {
            let over = state.withLock { state -> Bool in
                state.worker = worker
                state.watch = watch
                return state.done
            }
            if over { watchdog.unwatch(watch) }
        }
    }

    static func run<Value: Sendable>(
        until deadline: Date, watchdog: AttemptWatchdog, _ work: @escaping @Sendable () async throws -> Value
    ) async -> Outcome<Value> {
        let race = Race<Value>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                race.state.withLock { $0.continuation = continuation }
                let worker = Task {
                    do {
                        race.finish(.finished(.success(try await work())), watchdog: watchdog)
                    } catch {
                        race.finish(.finished(.failure(error)), watchdog: watchdog)
                    }
                }
                let watch = watchdog.watch(until: deadline) { race.finish(.timedOut(abandoned: worker), watchdog: watchdog) }
                race.track(worker: worker, watch: watch, watchdog: watchdog)
                if Task.isCancelled { race.cancel(watchdog: watchdog) }
            }
        } onCancel: {
            race.cancel(watchdog: watchdog)
        }
    }
}
