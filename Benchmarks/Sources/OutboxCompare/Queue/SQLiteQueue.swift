import Foundation
import GRDB

/// A SQLite table used as a queue, through GRDB.swift: what an app reaches
/// for first. WAL mode; each produce is one INSERT in its own transaction,
/// each take one DELETE … RETURNING of the oldest rows in its own
/// transaction.
final class SQLiteQueue: BlockingQueue {
    let name: String
    private let pool: DatabasePool

    /// Rows per transaction when filling.
    private static let fillBatch = 10_000

    /// `id INTEGER PRIMARY KEY` is the rowid, without AUTOINCREMENT: a new
    /// row's rowid is one more than the largest in the table, so the rows
    /// the table holds are always in insert order, which is all a queue
    /// needs. (Once the table drains, ids start again from 1; only the
    /// order among rows present at the same time matters.) AUTOINCREMENT
    /// would also update `sqlite_sequence` on every insert — extra work that
    /// SQLite's documentation advises against when it is not needed.
    private static let schema = "CREATE TABLE IF NOT EXISTS queue (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)"
    private static let insertSQL = "INSERT INTO queue (payload) VALUES (?)"
    private static let takeSQL = """
        DELETE FROM queue WHERE id IN (SELECT id FROM queue ORDER BY id LIMIT ?) RETURNING id, payload
        """

    /// Opens (creating) the database at `path` in WAL mode, with
    /// `synchronous = FULL` for `.durable` (every commit syncs the WAL) and
    /// `NORMAL` for `.written` (commits reach the WAL in the page cache,
    /// synced at checkpoints), and reads both back.
    init(path: String, durability: QueueDurability) throws {
        let synchronous: SQLiteOutbox.Synchronous = durability == .durable ? .full : .normal
        name = "SQLite \(synchronous.rawValue)"
        var configuration = Configuration()
        configuration.label = "outbox-compare-queue"
        pool = try DatabasePool(path: path, configuration: configuration)
        do {
            try Self.setUp(pool, synchronous: synchronous)
        } catch {
            try? pool.close()
            throw error
        }
    }

    /// Sets and verifies the level and WAL mode, then creates the table.
    private static func setUp(_ pool: DatabasePool, synchronous: SQLiteOutbox.Synchronous) throws {
        try pool.setSynchronous(synchronous)
        try pool.writeWithoutTransaction { db in try db.execute(sql: schema) }
    }

    /// One INSERT in its own transaction, with the cached prepared
    /// statement, through GRDB's blocking API (the caller is on its own
    /// thread: no hop through Swift concurrency).
    func produce(_ element: [UInt8]) throws {
        let payload = Data(element)
        try pool.write { db in
            try db.cachedStatement(sql: Self.insertSQL).execute(arguments: [payload])
        }
    }

    /// Deletes and returns the oldest `max` rows in one write transaction.
    /// Concurrent callers are serialised by the writer (and SQLite's write
    /// lock), so each row is returned once. RETURNING does not promise any
    /// order, so the rows are sorted by id before they are returned.
    func take(max: Int) throws -> [[UInt8]] {
        guard max > 0 else { return [] }
        let rows = try pool.write { db -> [(id: Int64, payload: [UInt8])] in
            let cursor = try Row.fetchCursor(db.cachedStatement(sql: Self.takeSQL), arguments: [max])
            var rows: [(id: Int64, payload: [UInt8])] = []
            rows.reserveCapacity(Swift.min(max, 1024))
            while let row = try cursor.next() {
                // The row's blob is read in place (withUnsafeData) and copied once.
                let payload = try row.withUnsafeData(atIndex: 1) { data in data.map { [UInt8]($0) } ?? [] }
                rows.append((row[0], payload))
            }
            return rows
        }
        return rows.sorted { $0.id < $1.id }.map(\.payload)
    }

    /// Inserts in transactions of ``fillBatch`` rows (durability aside: the
    /// fill is not timed).
    func fill(_ elements: [[UInt8]]) throws {
        var start = elements.startIndex
        while start < elements.endIndex {
            let batch = elements[start..<Swift.min(start + Self.fillBatch, elements.endIndex)]
            try pool.write { db in
                let statement = try db.cachedStatement(sql: Self.insertSQL)
                for element in batch { try statement.execute(arguments: [Data(element)]) }
            }
            start = batch.endIndex
        }
    }

    func close() throws { try pool.close() }
}
