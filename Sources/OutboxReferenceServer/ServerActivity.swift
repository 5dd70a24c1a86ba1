import Hummingbird
import OutboxLocking

/// What the reference server is doing right now, for tests that must act
/// at a precise moment (a retry while the first request still runs).
public struct ReferenceActivity: Sendable, Hashable {
    /// Write requests inside the server: received, answer not yet returned
    /// by the middleware chain.
    public var writesInFlight = 0
    /// Requests held by a ``ServerFaults/slowApply`` fault: their key is
    /// claimed and their write not applied yet.
    public var slowAppliesHeld = 0
}

/// The activity behind a lock, with waiters for conditions on it.
final class ServerActivity: Sendable {
    private struct State {
        var activity = ReferenceActivity()
        var waiters: [(condition: @Sendable (ReferenceActivity) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    var snapshot: ReferenceActivity { state.withLock { $0.activity } }

    func update(_ change: (inout ReferenceActivity) -> Void) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            change(&state.activity)
            let activity = state.activity
            let met = state.waiters.filter { $0.condition(activity) }.map(\.continuation)
            state.waiters.removeAll { $0.condition(activity) }
            return met
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once `condition` holds (at once if it already does).
    func wait(until condition: @escaping @Sendable (ReferenceActivity) -> Bool) async {
        await withCheckedContinuation { continuation in
            let met = state.withLock { state -> Bool in
                if condition(state.activity) { return true }
                state.waiters.append((condition, continuation))
                return false
            }
            if met { continuation.resume() }
        }
    }
}

/// In front of everything: counts write requests in flight.
struct ActivityMiddleware: RouterMiddleware {
    typealias Context = ReferenceContext
    let activity: ServerActivity

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method != .get else { return try await next(request, context) }
        activity.update { $0.writesInFlight += 1 }
        defer { activity.update { $0.writesInFlight -= 1 } }
        return try await next(request, context)
    }
}
