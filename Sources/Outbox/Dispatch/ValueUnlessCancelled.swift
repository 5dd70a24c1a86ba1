import OutboxLocking

/// The value of `task`, or `nil` as soon as the calling task is
/// cancelled (the task itself goes on).
func valueUnlessCancelled<Value: Sendable>(of task: Task<Value, Never>) async -> Value? {
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
