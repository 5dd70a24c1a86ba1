import Foundation
import IdempotencyKeyMiddleware
import Synchronization

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
    /// Faults injected, by kind.
    public var faults: [String: Int] = [:]

    /// Keys whose write was applied more than once: must stay empty.
    public var appliedTwice: [String] { applied.filter { $0.value > 1 }.map(\.key).sorted() }
}

/// The ledger behind a lock.
final class LedgerBox: Sendable {
    private let ledger = Mutex(ReferenceLedger())

    func update(_ body: (inout ReferenceLedger) -> Void) { ledger.withLock { body(&$0) } }
    var snapshot: ReferenceLedger { ledger.withLock { $0 } }
}

/// Counts what the key store decides, for the ledger.
final class CountingKeyStore: IdempotencyKeyStore {
    let base: any IdempotencyKeyStore
    let ledger: LedgerBox

    init(base: any IdempotencyKeyStore, ledger: LedgerBox) {
        self.base = base
        self.ledger = ledger
    }

    func begin(key: String, fingerprint: [UInt8], now: Date, staleAfter: Duration) async throws -> IdempotencyBeginResult {
        let result = try await base.begin(key: key, fingerprint: fingerprint, now: now, staleAfter: staleAfter)
        switch result {
        case .completed: ledger.update { $0.replays += 1 }
        case .inProgress: ledger.update { $0.inProgress += 1 }
        case .fingerprintMismatch: ledger.update { $0.keyMismatches += 1 }
        case .proceed: break
        }
        return result
    }

    func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        try await base.complete(key: key, response: response, now: now, expiresAt: expiresAt)
    }

    func abandon(key: String) async throws { try await base.abandon(key: key) }

    func expire(now: Date) async throws -> Int { try await base.expire(now: now) }
}
