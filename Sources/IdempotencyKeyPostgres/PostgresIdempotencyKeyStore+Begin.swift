import Foundation
import IdempotencyKeyMiddleware
import PostgresNIO

extension PostgresIdempotencyKeyStore {
    /// Claims `key`: inserts an in-progress row, or decides from the row
    /// that is there (as every store does, `KeyRecord.decide`) and changes
    /// it only if it has not changed since it was read.
    ///
    /// A row held by another transaction longer than the lock timeout (an
    /// application transaction recording the key's response) is answered
    /// ``IdempotencyBeginResult/inProgress``: 409 with `Retry-After`.
    public func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult {
        let digest = digest(key)
        do {
            for _ in 0..<Self.maximumAttempts {
                if try await insertClaim(key: key, digest: digest, fingerprint: fingerprint, now: now, claim: claim) { return .proceed }
                // Deleted (expired, released) since the insert found it: try again.
                guard let found = try await read(digest) else { continue }
                switch KeyRecord.decide(found.record, key: key, fingerprint: fingerprint, now: now, claim: claim) {
                case .answer(let result):
                    return result
                case .claim:
                    if try await replace(found, key: key, digest: digest, fingerprint: fingerprint, now: now, claim: claim) { return .proceed }
                case .abandonClaim(let unsettled):
                    if try await markAbandoned(found, key: key, digest: digest) { return .outcomeUnknown(unsettled) }
                }
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == Self.lockNotAvailable {
            return .inProgress
        }
        throw PostgresIdempotencyKeyStoreError(.contention, "the row of key \(key) changed \(Self.maximumAttempts) times while it was claimed")
    }

    /// SQLSTATE 55P03: `lock_timeout` passed.
    static let lockNotAvailable = "55P03"

    /// Inserts the claim unless a row for the key exists; true if inserted.
    private func insertClaim(key: String, digest: ByteBuffer, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> Bool {
        try await !rows(
            """
            INSERT INTO \(unescaped: table) (scope, key_digest, client_key, fingerprint, state, owner, since, expires_at)
            VALUES (\(scope), \(digest), \(key), \(ByteBuffer(bytes: fingerprint)), 'in-progress', \(claim.owner), \(now), \(claim.expiresAt))
            ON CONFLICT (scope, key_digest) DO NOTHING
            RETURNING 1
            """
        ).isEmpty
    }

    private func read(_ digest: ByteBuffer) async throws -> PostgresKeyRow? {
        try await rows(
            "SELECT \(unescaped: PostgresKeyRow.columns) FROM \(unescaped: table) WHERE scope = \(scope) AND key_digest = \(digest)"
        ).first.map { try PostgresKeyRow.decode($0, table: table) }
    }

    /// Replaces an expired row with a new claim, if it is still the row read.
    private func replace(
        _ found: PostgresKeyRow, key: String, digest: ByteBuffer, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim
    ) async throws -> Bool {
        try await !rows(
            """
            UPDATE \(unescaped: table) SET client_key = \(key), fingerprint = \(ByteBuffer(bytes: fingerprint)), state = 'in-progress',
                owner = \(claim.owner), since = \(now), expires_at = \(claim.expiresAt), reason = NULL, status = NULL, headers = NULL,
                body = NULL, revision = revision + 1
            WHERE scope = \(scope) AND key_digest = \(digest) AND revision = \(found.revision)
            RETURNING 1
            """
        ).isEmpty
    }

    /// Marks another owner's stale claim outcome unknown, if it is still the row read.
    private func markAbandoned(_ found: PostgresKeyRow, key: String, digest: ByteBuffer) async throws -> Bool {
        try await !rows(
            """
            UPDATE \(unescaped: table) SET state = 'unknown', reason = \(IdempotencyUnknownReason.claimAbandoned.rawValue),
                client_key = \(key), revision = revision + 1
            WHERE scope = \(scope) AND key_digest = \(digest) AND revision = \(found.revision)
            RETURNING 1
            """
        ).isEmpty
    }
}
