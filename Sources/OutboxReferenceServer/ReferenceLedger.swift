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

    /// An empty ledger.
    public init() {}

    /// The ledger of several server processes sharing one
    /// ``ReferenceWrites`` store (`outbox serve --postgres`): what was applied
    /// is the shared store's (each process reports all of it: taken from the
    /// last), what each process absorbed or injected is added up.
    public static func acrossServers(_ ledgers: [ReferenceLedger]) -> ReferenceLedger {
        guard var total = ledgers.last else { return ReferenceLedger() }
        total.rejected = 0
        total.replays = 0
        total.inProgress = 0
        total.keyMismatches = 0
        total.outcomeUnknown = 0
        total.refusedAtCapacity = 0
        total.faults = [:]
        for ledger in ledgers { total.addCounts(of: ledger) }
        return total
    }

    /// Adds what `other` counted in its own process (not what it applied).
    mutating func addCounts(of other: ReferenceLedger) {
        rejected += other.rejected
        replays += other.replays
        inProgress += other.inProgress
        keyMismatches += other.keyMismatches
        outcomeUnknown += other.outcomeUnknown
        refusedAtCapacity += other.refusedAtCapacity
        faults.merge(other.faults, uniquingKeysWith: +)
    }

    /// This process's counts with what `writes` applied.
    func with(applied writes: ReferenceLedger) -> ReferenceLedger {
        var result = writes
        result.rejected = 0
        result.replays = 0
        result.inProgress = 0
        result.keyMismatches = 0
        result.outcomeUnknown = 0
        result.refusedAtCapacity = 0
        result.faults = [:]
        result.addCounts(of: self)
        return result
    }

    /// Keys whose write was applied more than once: must stay empty.
    public var appliedTwice: [String] { applied.filter { $0.value > 1 }.map(\.key).sorted() }
}

/// The ledger behind a lock.
final class LedgerBox: Sendable {
    private let ledger = Locked(ReferenceLedger())

    func update(_ body: (inout ReferenceLedger) -> Void) { ledger.withLock { body(&$0) } }
    var snapshot: ReferenceLedger { ledger.withLock { $0 } }
}
