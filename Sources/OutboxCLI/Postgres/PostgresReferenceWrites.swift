import Foundation
import IdempotencyKeyPostgres
import Logging
import OutboxReferenceServer
import PostgresNIO

/// The reference API's writes in PostgreSQL, for several `outbox serve
/// --postgres` processes on one database: ids are unique across them, and
/// any of them reports every write applied (`GET /ledger`).
///
/// Each write is one transaction that applies it **and records the key's
/// response** (``PostgresIdempotencyKeyStore/complete(key:response:expiresAt:owner:on:logger:)``):
/// applied and answered commit together, or neither does. A process killed
/// before the commit applied nothing; its claim is answered outcome unknown
/// once stale, as for any handler.
///
/// One append-only table, `outbox_reference_writes`: a row per applied
/// write, its kind, its idempotency key, what it names (the album, post or
/// conversation) and a like's value.
struct PostgresReferenceWrites: ReferenceWrites {
    let client: PostgresClient
    let keys: PostgresIdempotencyKeyStore
    let scope: String
    /// The middleware's owner and retention: the key's response is recorded
    /// as the middleware would record it.
    let owner: String
    let retention: Duration
    let logger: Logger

    /// Creates the table if needed (under an advisory lock: processes
    /// starting together do not race on it).
    static func prepare(client: PostgresClient, logger: Logger) async throws {
        try await client.withTransaction(logger: logger) { connection in
            _ = try await connection.query("SELECT pg_advisory_xact_lock(\(Int64(0x4F42_5257)))", logger: logger).collect()
            _ = try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS outbox_reference_writes (
                    seq bigserial PRIMARY KEY, scope text NOT NULL, kind text NOT NULL, idempotency_key text,
                    subject text NOT NULL, liked boolean)
                """, logger: logger
            ).collect()
            _ = try await connection.query(
                "CREATE INDEX IF NOT EXISTS outbox_reference_writes_scope ON outbox_reference_writes (scope, kind, seq)", logger: logger
            ).collect()
        }
    }

    func apply(_ write: ReferenceWrite, key: String?) async throws -> ReferenceAnswer {
        let expiresAt = Date().addingTimeInterval(Double(retention.components.seconds))
        return try await keys.withTransaction { connection in
            let (kind, subject, liked): (String, String, Bool?)
            switch write {
            case .album(let title): (kind, subject, liked) = ("album", title, nil)
            case .photo(let album, _):
                guard try await albumExists(album, on: connection) else { return .unknownAlbum(album) }
                (kind, subject, liked) = ("photo", album, nil)
            case .like(let post, let value): (kind, subject, liked) = ("like", post, value)
            case .message(let conversation, _): (kind, subject, liked) = ("message", conversation, nil)
            }
            let rows = try await connection.query(
                """
                INSERT INTO outbox_reference_writes (scope, kind, idempotency_key, subject, liked)
                VALUES (\(scope), \(kind), \(key), \(subject), \(liked)) RETURNING seq
                """, logger: logger)
            var sequence: Int64 = 0
            for try await seq in rows.decode(Int64.self) { sequence = seq }
            let answer: ReferenceAnswer
            switch write {
            case .album: answer = ReferenceAnswer(status: 201, json: ["id": "alb-\(sequence)"])
            case .photo: answer = ReferenceAnswer(status: 201, json: ["id": "ph-\(sequence)"])
            case .like(let post, let value): answer = ReferenceAnswer(status: 200, json: ["id": post, "liked": value])
            case .message: answer = ReferenceAnswer(status: 201, json: ["id": "msg-\(sequence)"])
            }
            // The key's response, in the write's own transaction.
            if let key {
                try await keys.complete(key: key, response: answer.stored, expiresAt: expiresAt, owner: owner, on: connection, logger: logger)
            }
            return answer
        }
    }

    private func albumExists(_ album: String, on connection: PostgresConnection) async throws -> Bool {
        guard album.hasPrefix("alb-"), let sequence = Int64(album.dropFirst(4)) else { return false }
        let rows = try await connection.query(
            "SELECT 1 FROM outbox_reference_writes WHERE scope = \(scope) AND kind = 'album' AND seq = \(sequence)", logger: logger)
        for try await _ in rows { return true }
        return false
    }

    func applied() async throws -> ReferenceLedger {
        var ledger = ReferenceLedger()
        let rows = try await client.query(
            "SELECT kind, idempotency_key, subject, liked FROM outbox_reference_writes WHERE scope = \(scope) ORDER BY seq", logger: logger)
        for try await (kind, key, subject, liked) in rows.decode((String, String?, String, Bool?).self) {
            switch kind {
            case "album": ledger.albums += 1
            case "photo": ledger.photos += 1
            case "message": ledger.messages += 1
            case "like":
                ledger.likes[subject] = liked ?? true
                ledger.likeWrites += 1
            default: continue
            }
            if let key { ledger.applied[key, default: 0] += 1 } else { ledger.appliedWithoutKey += 1 }
        }
        return ledger
    }
}
