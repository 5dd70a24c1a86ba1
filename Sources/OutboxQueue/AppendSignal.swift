import OutboxLocking

/// Wakes tails waiting for new elements. The queue's log is open in one
/// process only, so every append passes through the queue, which bumps the
/// generation after each: a tail notes the generation before it reads, and
/// if the read found nothing waits for a later one — an append that lands
/// between its read and its wait is never missed, and nothing polls.
final class AppendSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var closed = false
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var nextID: UInt64 = 0
        /// Waits begun and not yet registered or answered.
        var starting: Set<UInt64> = []
        /// Of those, the ones cancelled before they registered.
        var cancelled: Set<UInt64> = []
    }

    private let state = Locked(State())

    /// Bumped after every append, and by ``close()``.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// An append finished: wakes every wait.
    func appended() {
        let woken = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.generation += 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for continuation in woken { continuation.resume(returning: true) }
    }

    /// The queue closed: every wait, now and later, returns `false`.
    func close() {
        let woken = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.closed = true
            state.generation += 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for continuation in woken { continuation.resume(returning: false) }
    }

    /// Returns `true` once the generation is past `generation`; `false` if
    /// the queue closed or the task was cancelled.
    func wait(after generation: UInt64) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextID += 1 }
            state.starting.insert(state.nextID)
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let ready = state.withLock { state -> Bool? in
                    state.starting.remove(id)
                    if state.cancelled.remove(id) != nil || state.closed { return false }
                    if state.generation > generation { return true }
                    state.waiters[id] = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                // Not registered yet: it sees this when it does. Already
                // answered: nothing to do, nothing kept.
                if state.starting.contains(id) { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume(returning: false)
        }
    }
}
