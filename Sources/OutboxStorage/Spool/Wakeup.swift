import OutboxLocking

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
