import Crypto
import Foundation
import Logging
import PostgresNIO

/// The store's tables and their migrations.
///
/// `outbox_idempotency_schema` has one row per keys table: the version of
/// its layout and the secret its key digests are keyed with (32 random
/// bytes, made by the first store that creates the table and read by every
/// other). Migrations run in one transaction under an advisory lock, so any
/// number of server processes may start at once: the first creates or
/// upgrades, the others wait for it (up to five minutes, not the requests'
/// lock timeout) and find nothing to do.
enum PostgresKeySchema {
    /// The layout this code reads and writes.
    static let currentVersion: Int32 = 1
    static let schemaTable = "outbox_idempotency_schema"
    /// `pg_advisory_xact_lock` key of the migrations ("OBKP").
    static let migrationLock: Int64 = 0x4F42_4B50
    /// How long a migration may wait for the lock, and each of its statements run.
    static let migrationTimeout = "5min"

    /// The statements that bring a table from `version - 1` to `version`.
    static func steps(table t: String) -> [(version: Int32, statements: [String])] {
        [
            (
                1,
                [
                    """
                    CREATE TABLE IF NOT EXISTS \(t) (
                        scope text NOT NULL,
                        key_digest bytea NOT NULL,
                        client_key text,
                        fingerprint bytea NOT NULL,
                        state text NOT NULL CHECK (state IN ('in-progress', 'completed', 'unknown')),
                        owner text,
                        since timestamptz NOT NULL,
                        expires_at timestamptz NOT NULL,
                        reason text,
                        status integer,
                        headers jsonb,
                        body bytea,
                        revision bigint NOT NULL DEFAULT 0,
                        PRIMARY KEY (scope, key_digest)
                    )
                    """,
                    "CREATE INDEX IF NOT EXISTS \(t)_expiry ON \(t) (scope, expires_at)",
                    "CREATE INDEX IF NOT EXISTS \(t)_unsettled ON \(t) (scope, since) WHERE state <> 'completed'",
                ]
            )
        ]
    }

    /// Creates or upgrades `table` if `migrate`, and returns its digest secret.
    static func prepare(table: String, migrate: Bool, client: PostgresClient, timeout: Duration, logger: Logger) async throws -> [UInt8] {
        guard migrate else { return try await readSecret(table: table, client: client, timeout: timeout, logger: logger) }
        return try await PostgresLease.withTransaction(client, timeout: timeout, logger: logger) { connection in
            // Not the request path: wait for another process's migration (and
            // run this one) longer than requests may wait, yet not forever.
            _ = try await connection.query(PostgresQuery(unsafeSQL: "SET LOCAL lock_timeout = '\(migrationTimeout)'"), logger: logger).collect()
            _ = try await connection.query(PostgresQuery(unsafeSQL: "SET LOCAL statement_timeout = '\(migrationTimeout)'"), logger: logger).collect()
            _ = try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger).collect()
            _ = try await connection.query(
                PostgresQuery(
                    unsafeSQL:
                        "CREATE TABLE IF NOT EXISTS \(schemaTable) (key_table text PRIMARY KEY, version integer NOT NULL, secret bytea NOT NULL)"),
                logger: logger
            ).collect()
            let found = try await version(table: table, on: connection, logger: logger)
            if let found, found.version > currentVersion { throw tooNew(table: table, version: found.version) }
            let secret = found?.secret ?? Array(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
            let from = found?.version ?? 0
            for step in steps(table: table) where step.version > from {
                for statement in step.statements { _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger).collect() }
                logger.info("idempotency key table migrated", metadata: ["table": "\(table)", "version": "\(step.version)"])
            }
            _ = try await connection.query(
                """
                INSERT INTO outbox_idempotency_schema (key_table, version, secret) VALUES (\(table), \(currentVersion), \(ByteBuffer(bytes: secret)))
                ON CONFLICT (key_table) DO UPDATE SET version = EXCLUDED.version
                """, logger: logger
            ).collect()
            return secret
        }
    }

    private static func readSecret(table: String, client: PostgresClient, timeout: Duration, logger: Logger) async throws -> [UInt8] {
        let found: (version: Int32, secret: [UInt8])?
        do {
            found = try await PostgresLease.withConnection(client, timeout: timeout) { try await version(table: table, on: $0, logger: logger) }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "42P01" {
            throw PostgresIdempotencyKeyStoreError(.schemaMissing, "\(schemaTable) does not exist: open a store with migrate on once")
        }
        guard let found else {
            throw PostgresIdempotencyKeyStoreError(.schemaMissing, "the keys table \(table) was never created: open a store with migrate on once")
        }
        guard found.version <= currentVersion else { throw tooNew(table: table, version: found.version) }
        guard found.version == currentVersion else {
            throw PostgresIdempotencyKeyStoreError(
                .schemaMissing, "the keys table \(table) is at version \(found.version), this store reads \(currentVersion): migrate it")
        }
        return found.secret
    }

    private static func version(table: String, on connection: PostgresConnection, logger: Logger) async throws
        -> (version: Int32, secret: [UInt8])?
    {
        let rows = try await connection.query("SELECT version, secret FROM outbox_idempotency_schema WHERE key_table = \(table)", logger: logger)
        for try await (version, secret) in rows.decode((Int32, ByteBuffer).self) {
            guard secret.readableBytes == 32 else {
                throw PostgresIdempotencyKeyStoreError(.damagedRow, "the digest secret of \(table) is \(secret.readableBytes) bytes, not 32")
            }
            return (version, Array(buffer: secret))
        }
        return nil
    }

    private static func tooNew(table: String, version: Int32) -> PostgresIdempotencyKeyStoreError {
        PostgresIdempotencyKeyStoreError(
            .schemaTooNew, "the keys table \(table) is at version \(version), newer than the \(currentVersion) this store reads")
    }
}
