import Foundation
import OutboxLocking

/// Kills a process still running after a time limit, once (``OutboxTool``'s
/// `stopAfter`). Real time on purpose: the limit is how long a real child
/// process is given before the test ends it.
final class StopTimer: Sendable {
    private let fired = Locked(false)
    private let timer: Task<Void, Never>

    init(process: Process, after limit: Duration) {
        let fired = fired
        timer = Task {
            // Polls until the process has started, then waits out the limit.
            while !process.isRunning && process.processIdentifier == 0 {
                try? await Task.sleep(for: .milliseconds(10))
                if Task.isCancelled { return }
            }
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled else { return }
            fired.withLock { fired in
                if process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                    fired = true
                }
            }
        }
    }

    /// Cancels the timer; whether it killed the process.
    func finish() -> Bool {
        timer.cancel()
        return fired.withLock { $0 }
    }
}
