import OutboxLocking

/// Wakes tails waiting for new elements. The queue's log is open in one
/// process only, so every append passes through the queue, which bumps the
/// generation after each: a tail notes the generation before it reads, and
/// if the read found nothing waits for a later one — an append that lands
/// between its read and its wait is never missed, and nothing polls.
final class AppendSignal: Sendable {
    private struct Waiter {
        var id: UInt64
        var after: UInt64
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var generation: UInt64 = 0
        var closed = false
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
        /// Waits cancelled before they were registered.
        var cancelled: Set<UInt64> = []
    }

    private let state = Locked(State())

    /// Bumped after every append, and by ``close()``.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// An append finished: wakes every wait.
    func appended() {
        let woken = state.withLock { state -> [Waiter] in
            state.generation += 1
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in woken { waiter.continuation.resume(returning: true) }
    }

    /// The queue closed: every wait, now and later, returns `false`.
    func close() {
        let woken = state.withLock { state -> [Waiter] in
            state.closed = true
            state.generation += 1
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in woken { waiter.continuation.resume(returning: false) }
    }

    /// Returns `true` once the generation is past `generation`; `false` if
    /// the queue closed or the task was cancelled.
    func wait(after generation: UInt64) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let ready = state.withLock { state -> Bool? in
                    if state.closed || state.cancelled.remove(id) != nil { return false }
                    if state.generation > generation { return true }
                    state.waiters.append(Waiter(id: id, after: generation, continuation: continuation))
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
    }
}
