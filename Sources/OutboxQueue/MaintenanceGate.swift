import OutboxLocking

/// One maintenance step at a time: trims, consumer creations and consumer
/// removals take turns, first come first served. A trim reads every
/// consumer's commit and then removes below them; a consumer created (at
/// the oldest element) or removed between the two would be missed, and
/// lose what the trim removes. Commits need no turn: they only move
/// forward, which never makes a trim remove more.
final class MaintenanceGate: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    /// Runs `body` once every step before it has ended.
    func run<Result>(_ body: () async throws(QueueError) -> Result) async throws(QueueError) -> Result {
        await enter()
        defer { leave() }
        return try await body()
    }

    /// How many steps wait for their turn.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    private func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func leave() {
        // The turn passes straight to the next waiter, still busy.
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
