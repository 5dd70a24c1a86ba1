import Foundation
import IdempotencyKeyMiddleware
import OutboxLocking

/// What the reference server did: every write it applied, by idempotency
/// key, and what the middleware absorbed. The demo's proof of "exactly once".
public struct ReferenceLedger: Sendable, Hashable, Codable {
    /// Idempotency key → how many times a handler applied its write.
    public var applied: [String: Int] = [:]
    /// Writes applied without a key (should be none).
    public var appliedWithoutKey = 0
    public var albums = 0
    public var photos = 0
    public var messages = 0
    /// Posts → their current like state.
    public var likes: [String: Bool] = [:]
    /// Like writes applied (after client-side coalescing).
    public var likeWrites = 0
    /// Requests rejected by validation (422 from the API itself).
    public var rejected = 0
    /// Repeats answered with the stored response.
    public var replays = 0
    /// Repeats that arrived while the first was still running (409).
    public var inProgress = 0
    /// Keys reused with a different request (422 from the middleware).
    public var keyMismatches = 0
    /// Repeats of a key whose outcome is unknown (503 from the middleware).
    public var outcomeUnknown = 0
    /// New keys refused because the key store was full (503 from the middleware).
    public var refusedAtCapacity = 0
    /// Faults injected, by kind.
    public var faults: [String: Int] = [:]

    /// Keys whose write was applied more than once: must stay empty.
    public var appliedTwice: [String] { applied.filter { $0.value > 1 }.map(\.key).sorted() }
}

/// The ledger behind a lock.
final class LedgerBox: Sendable {
    private let ledger = Locked(ReferenceLedger())

    func update(_ body: (inout ReferenceLedger) -> Void) { ledger.withLock { body(&$0) } }
    var snapshot: ReferenceLedger { ledger.withLock { $0 } }
}
