import Foundation
import OutboxLocking

/// Kills a process still running after a time limit, once (``OutboxTool``'s
/// `stopAfter`). Real time on purpose: the limit is how long a real child
/// process is given before the test ends it. The limit runs from
/// ``start()``, called once the process is running.
public final class StopTimer: Sendable {
    private struct State {
        var fired = false
        var finished = false
        var timer: Task<Void, Never>?
    }
    private let state = Locked(State())
    private let process: Process
    private let limit: Duration

    public init(process: Process, after limit: Duration) {
        self.process = process
        self.limit = limit
    }

    /// Starts the limit: the process has just been started.
    public func start() {
        let timer = Task { [state, process, limit] in
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled else { return }
            state.withLock { state in
                if !state.finished, process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                    state.fired = true
                }
            }
        }
        let late = state.withLock { state -> Bool in
            state.timer = timer
            return state.finished
        }
        if late { timer.cancel() }
    }

    /// Cancels the timer; whether it killed the process.
    public func finish() -> Bool {
        state.withLock { state in
            state.finished = true
            state.timer?.cancel()
            return state.fired
        }
    }
}
