import Foundation
import GRDB
import Synchronization

/// The outbox the seeds describe (seed 004, `offline_sync_queue`), in SQLite
/// through GRDB.swift: WAL mode, one transaction per enqueue and per
/// acknowledgement, prepared (cached) statements.
final class SQLiteOutbox: Sendable {
    enum Synchronous: String, Sendable {
        /// Every commit syncs the WAL: compared with our `durable`.
        case full = "FULL"
        /// Commits are written to the WAL, synced only at checkpoints:
        /// compared with our `written`.
        case normal = "NORMAL"

        /// What `PRAGMA synchronous` reads back.
        var code: Int { self == .full ? 2 : 1 }
    }

    let pool: DatabasePool
    let path: String
    /// Sequence numbers are handed out in memory (cheaper for SQLite than the
    /// `MAX(sequence_number) + 1` a real app would run in the transaction).
    private let sequence = Atomic<Int64>(0)
    private let userID = "6f1c3c0e-6b53-4f5e-9a55-2d4d4f8a1b01"

    static let schema = """
        CREATE TABLE IF NOT EXISTS offline_sync_queue (
            id TEXT PRIMARY KEY NOT NULL,
            user_id TEXT NOT NULL,
            operation TEXT NOT NULL,
            entity_type TEXT NOT NULL,
            local_id TEXT,
            server_id TEXT,
            endpoint TEXT NOT NULL,
            payload TEXT,
            headers TEXT,
            idempotency_key TEXT NOT NULL,
            status TEXT NOT NULL,
            attempt_count INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL,
            next_retry_at INTEGER,
            last_error TEXT,
            last_error_code INTEGER,
            sequence_number INTEGER NOT NULL,
            dependency_ids TEXT,
            created_at INTEGER NOT NULL,
            synced_at INTEGER,
            conflict_resolution TEXT,
            priority INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_offline_sync_queue_user_status ON offline_sync_queue(user_id, status);
        CREATE INDEX IF NOT EXISTS idx_offline_sync_queue_status_next_retry ON offline_sync_queue(status, next_retry_at);
        CREATE INDEX IF NOT EXISTS idx_offline_sync_queue_user_sequence ON offline_sync_queue(user_id, sequence_number);
        CREATE UNIQUE INDEX IF NOT EXISTS idx_offline_sync_queue_idempotency_key ON offline_sync_queue(idempotency_key);
        CREATE INDEX IF NOT EXISTS idx_offline_sync_queue_entity_type ON offline_sync_queue(entity_type, status);
        CREATE INDEX IF NOT EXISTS idx_offline_sync_queue_local_id ON offline_sync_queue(local_id);
        """

    static let insertSQL = """
        INSERT INTO offline_sync_queue (id, user_id, operation, entity_type, local_id, server_id, endpoint, payload,
            headers, idempotency_key, status, attempt_count, max_attempts, next_retry_at, last_error, last_error_code,
            sequence_number, dependency_ids, created_at, synced_at, conflict_resolution, priority)
        VALUES (?, ?, 'POST', 'message', ?, NULL, '/conversations/c1/messages', ?, '{"Content-Type":"application/json"}',
            ?, 'pending', 0, 10, NULL, NULL, NULL, ?, NULL, ?, NULL, 'manual', 0)
        """

    /// Opens (creating) the database at `path` in WAL mode with the given
    /// `synchronous` level, and verifies both with PRAGMAs.
    init(path: String, synchronous: Synchronous) throws {
        self.path = path
        var configuration = Configuration()
        configuration.label = "outbox-compare"
        pool = try DatabasePool(path: path, configuration: configuration)
        try pool.setSynchronous(synchronous)
        try pool.writeWithoutTransaction { db in try db.execute(sql: Self.schema) }
        let maximum = try pool.read { db in try Int64.fetchOne(db, sql: "SELECT MAX(sequence_number) FROM offline_sync_queue") }
        sequence.store(maximum ?? 0, ordering: .relaxed)
    }

    /// What the writer connection reports now (for the report).
    func pragmas() throws -> (synchronous: Int, journalMode: String) {
        try pool.writeWithoutTransaction { db in
            (try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1, try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "?")
        }
    }

    /// One INSERT in its own transaction. Returns the entry's id.
    func enqueue(payload: String) async throws -> String {
        try await enqueueKeyed(payload: payload).id
    }

    /// One INSERT in its own transaction. Returns the entry's id and its
    /// idempotency key.
    func enqueueKeyed(payload: String) async throws -> (id: String, key: String) {
        let id = UUID().uuidString
        let key = UUID().uuidString
        let number = sequence.add(1, ordering: .relaxed).newValue
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let user = userID
        try await pool.write { db in
            try db.cachedStatement(sql: Self.insertSQL).execute(arguments: [id, user, id, payload, key, number, now])
        }
        return (id, key)
    }

    /// The same with GRDB's blocking API (for one producer on its own thread:
    /// no hop through a dispatch queue and back).
    func enqueueBlocking(payload: String) throws -> String {
        let id = UUID().uuidString
        let key = UUID().uuidString
        let number = sequence.add(1, ordering: .relaxed).newValue
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try pool.write { db in
            try db.cachedStatement(sql: Self.insertSQL).execute(arguments: [id, userID, id, payload, key, number, now])
        }
        return id
    }

    func acknowledgeBlocking(_ id: String) throws {
        try pool.write { db in
            try db.cachedStatement(sql: "DELETE FROM offline_sync_queue WHERE id = ?").execute(arguments: [id])
        }
    }

    /// The delivered entry's DELETE, in its own transaction.
    func acknowledge(_ id: String) async throws {
        try await pool.write { db in
            try db.cachedStatement(sql: "DELETE FROM offline_sync_queue WHERE id = ?").execute(arguments: [id])
        }
    }

    /// Claims up to `limit` due entries (in flight, attempt counted) in one
    /// transaction, in priority then sequence order.
    func claimDue(limit: Int) async throws -> [String] {
        try await claim(columns: "id", limit: limit, id: { $0 }) { statement, arguments in
            try String.fetchAll(statement, arguments: arguments)
        }
    }

    /// What a relaunched app does first: entries a crash left in flight go
    /// back to pending (their attempt stays counted), in one transaction.
    func requeueInFlight() throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE offline_sync_queue SET status = 'pending' WHERE status = 'in_flight'")
        }
    }

    /// One claimed row: what the drainer sends.
    struct ClaimedRow: Sendable {
        var id: String
        var key: String
        var endpoint: String
        var payload: String
    }

    /// ``claimDue(limit:)`` with the request fields of each row.
    func claimDueRows(limit: Int) async throws -> [ClaimedRow] {
        try await claim(columns: "id, idempotency_key, endpoint, payload", limit: limit, id: \.id) { statement, arguments in
            try Row.fetchAll(statement, arguments: arguments).map { row in
                ClaimedRow(id: row["id"], key: row["idempotency_key"], endpoint: row["endpoint"], payload: row["payload"] ?? "")
            }
        }
    }

    /// In one transaction: selects `columns` of up to `limit` due entries
    /// (in priority then sequence order) with `fetch`, then marks each of
    /// them in flight and counts the attempt.
    private func claim<Claimed: Sendable>(
        columns: String, limit: Int, id: @escaping @Sendable (Claimed) -> String,
        fetch: @escaping @Sendable (Statement, StatementArguments) throws -> [Claimed]
    ) async throws -> [Claimed] {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return try await pool.write { db in
            let claimed = try fetch(
                db.cachedStatement(
                    sql: """
                        SELECT \(columns) FROM offline_sync_queue
                        WHERE status IN ('pending', 'failed') AND (next_retry_at IS NULL OR next_retry_at <= ?)
                        ORDER BY priority DESC, sequence_number LIMIT ?
                        """), [now, limit])
            let update = try db.cachedStatement(
                sql: "UPDATE offline_sync_queue SET status = 'in_flight', attempt_count = attempt_count + 1 WHERE id = ?")
            for item in claimed { try update.execute(arguments: [id(item)]) }
            return claimed
        }
    }

    /// A failed delivery: back to pending (the attempt stays counted).
    func release(_ id: String) async throws {
        try await pool.write { db in
            try db.cachedStatement(sql: "UPDATE offline_sync_queue SET status = 'pending' WHERE id = ?").execute(arguments: [id])
        }
    }

    /// Every entry id in the table.
    func allIDs() throws -> Set<String> {
        try pool.read { db in Set(try String.fetchAll(db, sql: "SELECT id FROM offline_sync_queue")) }
    }

    /// Inserts `count` pending entries in one transaction (a deep queue).
    func preload(count: Int, payload: String) throws {
        try pool.write { db in
            let statement = try db.cachedStatement(sql: Self.insertSQL)
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            for _ in 0..<count {
                let id = UUID().uuidString
                let number = sequence.add(1, ordering: .relaxed).newValue
                try statement.execute(arguments: [id, userID, id, payload, UUID().uuidString, number, now])
            }
        }
    }

    /// The first due entry's id (a read: what an app runs after launch).
    func firstDue() throws -> String? {
        try pool.read { db in
            try String.fetchOne(
                db,
                sql: """
                    SELECT id FROM offline_sync_queue WHERE status IN ('pending', 'failed')
                    ORDER BY priority DESC, sequence_number LIMIT 1
                    """)
        }
    }

    /// Entries not yet delivered.
    func pendingCount() throws -> Int {
        try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM offline_sync_queue") ?? 0 }
    }

    func close() throws { try pool.close() }
}

struct SQLiteSetupError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension DatabasePool {
    /// Sets `synchronous` on the writer and reads it back with the journal
    /// mode: DatabasePool puts the writer in WAL mode and resets the level
    /// to NORMAL when it opens, so the level is set after opening, and a
    /// comparison never runs at a level other than the one it names.
    func setSynchronous(_ synchronous: SQLiteOutbox.Synchronous) throws {
        let (level, journal) = try writeWithoutTransaction { db -> (Int?, String?) in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous.rawValue)")
            return (try Int.fetchOne(db, sql: "PRAGMA synchronous"), try String.fetchOne(db, sql: "PRAGMA journal_mode"))
        }
        guard level == synchronous.code else {
            throw SQLiteSetupError("PRAGMA synchronous is \(level.map(String.init) ?? "nil"), expected \(synchronous.code)")
        }
        guard journal?.lowercased() == "wal" else {
            throw SQLiteSetupError("journal_mode is \(journal ?? "nil"), expected wal")
        }
    }
}
