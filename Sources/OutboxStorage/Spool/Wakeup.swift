import OutboxLocking
import OutboxModel

/// A wake-up call that is never lost: ``signal()`` before ``wait()`` makes
/// the next wait return at once; many signals before a wait count as one.
/// One waiter at a time.
package final class Wakeup: Sendable {
    private let state = Locked<(signalled: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    package init() {}

    package func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at the next signal (at once if one came since the last wait).
    package func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.signalled {
                    state.signalled = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// The value of `task`, or `nil` as soon as the calling task is
/// cancelled (the task itself goes on).
package func valueUnlessCancelled<Value: Sendable>(of task: Task<Value, Never>) async -> Value? {
    let waiter = Locked<CheckedContinuation<Value?, Never>?>(nil)
    return await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            waiter.withLock { $0 = continuation }
            if Task.isCancelled { waiter.withLock { $0.take() }?.resume(returning: nil) }
            Task {
                let value = await task.value
                waiter.withLock { $0.take() }?.resume(returning: value)
            }
        }
    } onCancel: {
        waiter.withLock { $0.take() }?.resume(returning: nil)
    }
}
