import Foundation
import IdempotencyKeyMiddleware

/// Counts what the key store decides, for the ledger.
final class CountingKeyStore: IdempotencyKeyStore {
    let base: any IdempotencyKeyStore
    let ledger: LedgerBox

    init(base: any IdempotencyKeyStore, ledger: LedgerBox) {
        self.base = base
        self.ledger = ledger
    }

    func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult {
        let result = try await base.begin(key: key, fingerprint: fingerprint, now: now, claim: claim)
        switch result {
        case .completed: ledger.update { $0.replays += 1 }
        case .inProgress: ledger.update { $0.inProgress += 1 }
        case .fingerprintMismatch: ledger.update { $0.keyMismatches += 1 }
        case .outcomeUnknown: ledger.update { $0.outcomeUnknown += 1 }
        case .atCapacity: ledger.update { $0.refusedAtCapacity += 1 }
        case .proceed: break
        }
        return result
    }

    func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        try await base.complete(key: key, response: response, now: now, expiresAt: expiresAt)
    }

    func abandon(key: String, owner: String) async throws { try await base.abandon(key: key, owner: owner) }

    func settleUnknown(key: String, owner: String, now: Date, expiresAt: Date) async throws {
        try await base.settleUnknown(key: key, owner: owner, now: now, expiresAt: expiresAt)
    }

    func resolve(key: String, as resolution: IdempotencyResolution, now: Date) async throws {
        try await base.resolve(key: key, as: resolution, now: now)
    }

    func unsettledKeys(now: Date, limit: Int) async throws -> [IdempotencyUnsettledKey] {
        try await base.unsettledKeys(now: now, limit: limit)
    }

    func expire(now: Date) async throws -> Int { try await base.expire(now: now) }
}
