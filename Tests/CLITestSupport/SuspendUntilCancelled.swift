import OutboxLocking

/// Suspends until the task is cancelled, then throws `CancellationError`:
/// a handler or server that never answers on its own, for tests of
/// timeouts and watchdogs that must not wait on a real clock.
public func suspendUntilCancelled() async throws {
    let parked = Locked<CheckedContinuation<Void, Never>?>(nil)
    await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            parked.withLock { $0 = continuation }
            if Task.isCancelled { parked.withLock { $0.take() }?.resume() }
        }
    } onCancel: {
        parked.withLock { $0.take() }?.resume()
    }
    throw CancellationError()
}
