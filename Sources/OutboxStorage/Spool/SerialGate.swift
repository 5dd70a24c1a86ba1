import OutboxLocking

/// Lets one task at a time through, first come first served, across
/// suspension points (an actor would let a second caller in at each await).
final class SerialGate: Sendable {
    private let state = Locked<(busy: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func enter() async {
        await withCheckedContinuation { continuation in
            let admitted = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if admitted { continuation.resume() }
        }
    }

    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
