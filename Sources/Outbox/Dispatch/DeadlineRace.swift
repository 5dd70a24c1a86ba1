import Foundation
import OutboxLocking

/// Runs work against a deadline on an ``OutboxClock``, and gives up on the
/// work — cancelling it, but not waiting for it — when the deadline comes
/// first, or when the waiting task is cancelled. (A task group would wait
/// for a handler that ignores cancellation; a delivery watchdog must not.)
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
            var timer: Task<Void, Never>?
            var done = false
            var cancelled = false
        }

        let state = Locked(State())

        /// Resumes the waiter once; cancels whichever task lost.
        func finish(_ outcome: Outcome<Value>) {
            let (continuation, loser) = state.withLock { state -> (CheckedContinuation<Outcome<Value>, Never>?, Task<Void, Never>?) in
                guard !state.done else { return (nil, nil) }
                state.done = true
                defer { state.continuation = nil }
                switch outcome {
                case .timedOut(let worker): return (state.continuation, worker)
                case .cancelled(let worker):
                    state.timer?.cancel()
                    return (state.continuation, worker)
                case .finished: return (state.continuation, state.timer)
                }
            }
            loser?.cancel()
            continuation?.resume(returning: outcome)
        }

        /// The waiter was cancelled: give up on the work (once it is tracked).
        func cancel() {
            let worker = state.withLock { state -> Task<Void, Never>? in
                state.cancelled = true
                return state.worker
            }
            if let worker { finish(.cancelled(abandoned: worker)) }
        }

        /// Records the tasks; if the race is already over, cancels both.
        func track(worker: Task<Void, Never>, timer: Task<Void, Never>) {
            let over = state.withLock { state -> Bool in
                state.worker = worker
                state.timer = timer
                return state.done
            }
            if over {
                timer.cancel()
            }
        }
    }

    static func run<Value: Sendable>(
        until deadline: Date, clock: any OutboxClock, _ work: @escaping @Sendable () async throws -> Value
    ) async -> Outcome<Value> {
        let race = Race<Value>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                race.state.withLock { $0.continuation = continuation }
                let worker = Task {
                    do {
                        race.finish(.finished(.success(try await work())))
                    } catch {
                        race.finish(.finished(.failure(error)))
                    }
                }
                let timer = Task {
                    do { try await clock.sleep(until: deadline) } catch { return }
                    race.finish(.timedOut(abandoned: worker))
                }
                race.track(worker: worker, timer: timer)
                if Task.isCancelled { race.cancel() }
            }
        } onCancel: {
            race.cancel()
        }
    }
}
