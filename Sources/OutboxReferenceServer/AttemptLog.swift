import HTTPTypes
import Hummingbird
import IdempotencyKeyMiddleware
import NIOCore
import OutboxLocking

/// Every write request the server received — applied, replayed, refused or
/// disturbed by a fault — with the idempotency key it carried.
///
/// The ledger counts what was *applied* per key; this records what was
/// *attempted* per request, so a test can prove that every attempt at one
/// write carried the same key (a client that minted a new key on a retry
/// would show two keys for one request, even if only one was applied).
public struct AttemptLog: Sendable, Hashable, Codable {
    /// `"METHOD path body"` → idempotency key (`""` when none) → how many
    /// times that request arrived with that key.
    public var requests: [String: [String: Int]] = [:]

    /// Total write requests received.
    public var total: Int { requests.values.reduce(0) { $0 + $1.values.reduce(0, +) } }

    /// The keys seen for every request whose text contains `fragment`.
    public func keys(forRequestsContaining fragment: String) -> [String: Int] {
        var keys: [String: Int] = [:]
        for (request, seen) in requests where request.contains(fragment) {
            for (key, count) in seen { keys[key, default: 0] += count }
        }
        return keys
    }
}

/// Records each write request before anything else (faults included) sees it.
struct AttemptLogMiddleware: RouterMiddleware {
    typealias Context = ReferenceContext
    let box: AttemptLogBox

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method != .get else { return try await next(request, context) }
        var request = request
        // Collecting keeps the body readable for everything behind us.
        let body = try await request.collectBody(upTo: 1 << 20)
        let text = "\(request.method) \(request.uri.path) \(String(buffer: body))"
        let key = request.headers[IdempotencyHTTP.keyHeader] ?? ""
        box.log.withLock { $0.requests[text, default: [:]][key, default: 0] += 1 }
        return try await next(request, context)
    }
}

/// The attempt log behind a lock, shared with its middleware.
final class AttemptLogBox: Sendable {
    let log = Locked(AttemptLog())
}
