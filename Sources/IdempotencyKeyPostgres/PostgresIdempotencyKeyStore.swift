import Crypto
import Foundation
import IdempotencyKeyMiddleware
import Logging
import PostgresNIO

/// Idempotency keys on PostgreSQL, shared by every server process on the
/// database: a retry that lands on another node finds the key its first
/// attempt claimed.
///
/// ```swift
/// let client = PostgresClient(configuration: try PostgresIdempotencyKeyStore.clientConfiguration(url: url))
/// // run `client.run()` in a long-lived task (or a ServiceGroup) first
/// let keys = try await PostgresIdempotencyKeyStore.open(client: client)
/// router.add(middleware: IdempotencyMiddleware(store: keys))
/// ```
///
/// - **One row per (scope, key).** `begin` is an `INSERT … ON CONFLICT DO
///   NOTHING`: of two requests with the same key on two nodes, exactly one
///   inserts the claim and runs; the other finds the row and is answered
///   409 "in progress" (or the stored response once there is one). A row
///   that must change (expired, a stale claim) is updated under an
///   optimistic check of its `revision`, so two nodes never both take it.
/// - **A node killed mid-request** leaves its claim in progress. Other nodes
///   answer 409 until it is the middleware's `staleAfter` old, then mark it
///   outcome unknown (`claim-abandoned`) and answer 503 `outcome-unknown`:
///   its handler may have applied the write, so it is never run again.
///   Operators list and resolve such keys (``unsettledKeys(now:limit:)``,
///   ``resolve(key:as:now:)``; `outbox keys … --postgres URL`).
/// - **The response in the application's transaction.** A handler that
///   writes to the same database can record its response in its own
///   transaction (``complete(key:response:expiresAt:owner:on:logger:)``):
///   the write and the key then commit together, or neither does.
/// - **Keys are stored as digests.** The primary key holds HMAC-SHA256 of
///   the client's key under a per-table secret (made once, kept in
///   `outbox_idempotency_schema`); the key itself is kept only while an
///   operator may need it (in progress, outcome unknown) and cleared when
///   the response is stored. Every value reaches SQL as a bound parameter.
/// - **Bounded waits.** Statements run with `lock_timeout` and
///   `statement_timeout` (``Configuration``); a claim that finds the row
///   locked past the lock timeout is answered "in progress".
/// - **Expiry any node may run.** ``expire(now:)`` deletes expired rows in
///   bounded batches with `FOR UPDATE SKIP LOCKED`: sweeps on several nodes
///   never wait for each other or for a request.
///
/// Times are the ones the middleware passes (its clock): keep the servers'
/// clocks synchronised (NTP) well within `staleAfter`.
public final class PostgresIdempotencyKeyStore: IdempotencyKeyStore {
    /// The client the store queries through (the caller runs it).
    public let client: PostgresClient
    public let configuration: Configuration
    let secret: SymmetricKey
    let logger: Logger
    /// How often `begin` re-reads a row that changed under it before it
    /// gives up (a 503 for that request).
    static let maximumAttempts = 8

    private init(client: PostgresClient, configuration: Configuration, secret: [UInt8], logger: Logger) {
        self.client = client
        self.configuration = configuration
        self.secret = SymmetricKey(data: secret)
        self.logger = logger
    }

    /// Opens the store on `client` (which must be running): creates or
    /// upgrades its table when ``Configuration/migrate`` is on, and reads the
    /// table's digest secret.
    ///
    /// - Throws: ``PostgresIdempotencyKeyStoreError`` for a bad
    ///   configuration or a table of another version; the database's errors
    ///   as they come.
    public static func open(
        client: PostgresClient, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "outbox.idempotency.postgres")
    ) async throws -> PostgresIdempotencyKeyStore {
        try configuration.validate()
        let secret = try await PostgresKeySchema.prepare(
            table: configuration.table, migrate: configuration.migrate, client: client, timeout: configuration.connectionWait, logger: logger)
        return PostgresIdempotencyKeyStore(client: client, configuration: configuration, secret: secret, logger: logger)
    }

    /// The key's identity in the table: HMAC-SHA256 under the table's secret.
    func digest(_ key: String) -> ByteBuffer {
        ByteBuffer(bytes: Array(HMAC<SHA256>.authenticationCode(for: Array(key.utf8), using: secret)))
    }

    var table: String { configuration.table }
    var scope: String { configuration.scope }

    /// Runs `query` and returns its rows, collected; waits at most
    /// ``Configuration/connectionWait`` for a connection.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let logger = logger
        return try await PostgresLease.withConnection(client, timeout: configuration.connectionWait) { connection in
            try await connection.query(query, logger: logger).collect()
        }
    }

    /// A claim its owner still holds: in progress, or marked abandoned by
    /// another node that found it stale (its clock ahead, or the request
    /// outlived `staleAfter`) while the owner still ran it. The owner is the
    /// one that knows how it ended: it may complete it or release it.
    static let heldClaim = "(state = 'in-progress' OR (state = 'unknown' AND reason = 'claim-abandoned'))"

    // MARK: IdempotencyKeyStore

    public func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        // No owner here: only the middleware that claimed the key completes
        // it. A claim another node marked abandoned while its handler ran is
        // completed too: the answer is known after all.
        _ = try await rows(completion(key: key, response: response, expiresAt: expiresAt, when: Self.heldClaim))
    }

    /// `UPDATE` that stores `response` for `key` where the row's state
    /// passes `condition` (a fixed SQL condition of this module, never
    /// client input), it belongs to `owner` if one is given, and it has not
    /// expired at `liveAt` if given; returns a row if it did.
    func completion(
        key: String, response: StoredResponse, expiresAt: Date, owner: String? = nil, liveAt: Date? = nil, when condition: String
    ) throws -> PostgresQuery {
        let headers = try PostgresKeyRow.encodeHeaders(response.headers)
        return """
            UPDATE \(unescaped: table) SET state = 'completed', status = \(Int32(response.status)), headers = \(headers)::jsonb,
                body = \(ByteBuffer(bytes: response.body)), expires_at = \(expiresAt), client_key = NULL, reason = NULL,
                revision = revision + 1
            WHERE scope = \(scope) AND key_digest = \(digest(key)) AND \(unescaped: condition)
                AND (\(owner)::text IS NULL OR owner = \(owner))
                AND (\(liveAt)::timestamptz IS NULL OR expires_at > \(liveAt))
            RETURNING 1
            """
    }

    /// Deletes `owner`'s claim, also once another node marked it abandoned
    /// (``heldClaim``): the owner ran it and says nothing was applied, so the
    /// key need not wait for an operator.
    public func abandon(key: String, owner: String) async throws {
        _ = try await rows(
            """
            DELETE FROM \(unescaped: table)
            WHERE scope = \(scope) AND key_digest = \(digest(key)) AND \(unescaped: Self.heldClaim) AND owner = \(owner)
            """)
    }

    public func settleUnknown(key: String, owner: String, now: Date, expiresAt: Date) async throws {
        _ = try await rows(
            """
            UPDATE \(unescaped: table) SET state = 'unknown', reason = \(IdempotencyUnknownReason.responseNotRecorded.rawValue),
                expires_at = \(expiresAt), revision = revision + 1
            WHERE scope = \(scope) AND key_digest = \(digest(key)) AND state = 'in-progress' AND owner = \(owner)
            """)
    }

    public func resolve(key: String, as resolution: IdempotencyResolution, now: Date) async throws {
        let digest = digest(key)
        let changed: [PostgresRow]
        switch resolution {
        case .applied(let response, let expiresAt):
            changed = try await rows(completion(key: key, response: response, expiresAt: expiresAt, liveAt: now, when: "state = 'unknown'"))
        case .notApplied:
            changed = try await rows(
                """
                DELETE FROM \(unescaped: table)
                WHERE scope = \(scope) AND key_digest = \(digest) AND state = 'unknown' AND expires_at > \(now)
                RETURNING 1
                """)
        }
        guard !changed.isEmpty else { throw IdempotencyKeyStoreError(.notUnsettled, "the outcome of key \(key) is not unknown") }
    }

    /// Keys whose outcome is unknown, oldest first. In-progress claims older
    /// than ``Configuration/staleAfter`` are first marked so
    /// (`claim-abandoned`), as the next request with their key would.
    public func unsettledKeys(now: Date, limit: Int) async throws -> [IdempotencyUnsettledKey] {
        let staleBefore = now.addingTimeInterval(-configuration.staleAfter.timeInterval)
        _ = try await rows(
            """
            UPDATE \(unescaped: table) SET state = 'unknown', reason = \(IdempotencyUnknownReason.claimAbandoned.rawValue),
                revision = revision + 1
            WHERE scope = \(scope) AND state = 'in-progress' AND since <= \(staleBefore)
            """)
        let rows = try await rows(
            """
            SELECT client_key, since, expires_at, reason FROM \(unescaped: table)
            WHERE scope = \(scope) AND state = 'unknown' AND expires_at > \(now)
            ORDER BY since, client_key LIMIT \(Int64(max(0, limit)))
            """)
        return try rows.map { row in
            let (key, since, expiresAt, reasonText) = try row.decode((String?, Date, Date, String?).self)
            guard let key, let reason = reasonText.flatMap(IdempotencyUnknownReason.init(rawValue:)) else {
                throw PostgresIdempotencyKeyStoreError(.damagedRow, "an outcome-unknown row of \(table) has no key or reason")
            }
            return IdempotencyUnsettledKey(key: key, since: since, expiresAt: expiresAt, reason: reason)
        }
    }

    /// Deletes rows of this scope that expired at or before `now`, at most
    /// ``Configuration/expiryBatchSize`` per statement and
    /// ``Configuration/maximumExpiryBatches`` statements; rows another
    /// transaction holds are skipped (`SKIP LOCKED`), never waited for.
    ///
    /// An in-progress claim is deleted once it has expired (the claim's
    /// time plus the middleware's retention) **and** is
    /// ``Configuration/staleAfter`` old — only then is its server taken for
    /// gone, as `begin` takes it: a request still running past a retention
    /// shorter than itself keeps its claim, so no node runs it again alongside.
    public func expire(now: Date) async throws -> Int {
        let staleBefore = now.addingTimeInterval(-configuration.staleAfter.timeInterval)
        var removed = 0
        for _ in 0..<configuration.maximumExpiryBatches {
            let deleted = try await rows(
                """
                DELETE FROM \(unescaped: table) WHERE (scope, key_digest) IN (
                    SELECT scope, key_digest FROM \(unescaped: table)
                    WHERE scope = \(scope) AND expires_at <= \(now) AND (state <> 'in-progress' OR since <= \(staleBefore))
                    LIMIT \(Int64(configuration.expiryBatchSize)) FOR UPDATE SKIP LOCKED)
                RETURNING 1
                """
            ).count
            removed += deleted
            if deleted < configuration.expiryBatchSize { break }
        }
        return removed
    }
}
