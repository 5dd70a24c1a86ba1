import Foundation
import Outbox
import OutboxBenchSupport
import OutboxLog

/// One system under comparison: how to open a session on it.
struct Contender: Sendable {
    let name: String
    let isOurs: Bool
    let open: @Sendable () async throws -> Session
}

/// An open system: run the workload for a while, then close.
struct Session: Sendable {
    let run: @Sendable (_ seconds: Double) async throws -> TimedRun
    let close: @Sendable () async throws -> Void
}

/// What each operation of a comparison does.
enum Operation: Sendable {
    /// Enqueue, then acknowledge the same entry: two operations.
    case enqueueThenAcknowledge
    /// Enqueue only: the queue grows.
    case enqueue
}

enum Contenders {
    /// `LogOutboxStore` with the default configuration, except that the
    /// enqueue and the outcomes use `durability` (the attempt start stays
    /// `written`) and, when `preallocation` is not 0, segments are
    /// zero-filled that many bytes ahead (off by default; Docs/FORMAT.md,
    /// "Space allocated ahead"). Only the default configuration is judged
    /// against the goals (`isOurs`).
    static func ours(
        _ name: String, durability: Durability, producers: Int, operation: Operation, payload: [UInt8],
        preallocation: Int = 0
    ) -> Contender {
        Contender(name: name, isOurs: preallocation == 0) {
            let directory = try TemporaryDirectory(prefix: "outbox-compare-ours")
            var configuration = Workload.storeConfiguration(enqueue: durability, attempt: .written, outcome: durability)
            configuration.log.preallocation = preallocation
            let store = try await LogOutboxStore.open(
                root: directory.filePath, partition: Workload.partition, configuration: configuration)
            return Session(
                run: { seconds in
                    try await runTimed(producers: producers, seconds: seconds) { _, _ in
                        try await operation.timed {
                            try await store.enqueue(Workload.request(payload: payload)).id
                        } acknowledge: {
                            try await Workload.acknowledge($0, in: store)
                        }
                    }
                },
                close: {
                    try await store.close()
                    directory.remove()
                })
        }
    }

    /// SQLite through GRDB, WAL mode, at the given `synchronous` level.
    static func sqlite(
        _ name: String, synchronous: SQLiteOutbox.Synchronous, producers: Int, operation: Operation, payload: [UInt8]
    ) -> Contender {
        let text = String(decoding: payload, as: UTF8.self)
        return sqliteContender(name, synchronous: synchronous) { database, seconds in
            try await runTimed(producers: producers, seconds: seconds) { _, _ in
                try await operation.timed {
                    try await database.enqueue(payload: text)
                } acknowledge: {
                    try await database.acknowledge($0)
                }
            }
        }
    }

    /// SQLite with GRDB's blocking API, one producer on its own thread: the
    /// best case for SQLite (no async hops).
    static func sqliteBlocking(
        _ name: String, synchronous: SQLiteOutbox.Synchronous, operation: Operation, payload: [UInt8]
    ) -> Contender {
        let text = String(decoding: payload, as: UTF8.self)
        return sqliteContender(name, synchronous: synchronous) { database, seconds in
            try await runTimedBlocking(seconds: seconds) { _ in
                try operation.timedBlocking {
                    try database.enqueueBlocking(payload: text)
                } acknowledge: {
                    try database.acknowledgeBlocking($0)
                }
            }
        }
    }

    /// A fresh SQLite database in a scratch directory, which `run` drives.
    private static func sqliteContender(
        _ name: String, synchronous: SQLiteOutbox.Synchronous,
        run: @escaping @Sendable (SQLiteOutbox, _ seconds: Double) async throws -> TimedRun
    ) -> Contender {
        Contender(name: name, isOurs: false) {
            let directory = try TemporaryDirectory(prefix: "outbox-compare-sqlite")
            let database = try SQLiteOutbox(path: directory.appending("outbox.sqlite"), synchronous: synchronous)
            return Session(
                run: { seconds in try await run(database, seconds) },
                close: {
                    try database.close()
                    directory.remove()
                })
        }
    }

    /// A JSON array rewritten (temp + fsync + rename) on every change; one
    /// producer, on its own thread.
    static func jsonFile(_ name: String, operation: Operation, payload: [UInt8]) -> Contender {
        let text = String(decoding: payload, as: UTF8.self)
        return Contender(name: name, isOurs: false) {
            let directory = try TemporaryDirectory(prefix: "outbox-compare-json")
            let outbox = JSONFileOutbox(path: directory.appending("outbox.json"))
            return Session(
                run: { seconds in
                    try await runTimedBlocking(seconds: seconds) { _ in
                        try operation.timedBlocking {
                            try outbox.enqueue(payload: text)
                        } acknowledge: {
                            try outbox.acknowledge($0)
                        }
                    }
                },
                close: { directory.remove() })
        }
    }

    /// The physical limit: `write(2)` of `recordSize` bytes per operation
    /// (`group` records per call), followed by `fdatasync` if `sync`.
    static func raw(_ name: String, recordSize: Int, group: Int = 1, sync: Bool) -> Contender {
        rawLoop(name, group: group) { directory in
            let file = try RawAppendFile(path: directory.appending("raw.log"), recordSize: recordSize)
            return { try file.append(records: group, sync: sync) }
        }
    }

    /// The limit for durable appends into preallocated space: `pwrite(2)`
    /// of `recordSize` bytes into a file allocated ahead, then `fdatasync`.
    static func rawPreallocated(_ name: String, recordSize: Int) -> Contender {
        rawLoop(name, group: 1) { directory in
            let file = try RawPreallocatedFile(path: directory.appending("preallocated.log"), recordSize: recordSize)
            return { try file.append() }
        }
    }

    /// A raw loop in a scratch directory: `makeStep` opens its file there
    /// and returns one timed step, which writes `group` records.
    private static func rawLoop(
        _ name: String, group: Int, makeStep: @escaping @Sendable (TemporaryDirectory) throws -> @Sendable () throws -> Void
    ) -> Contender {
        Contender(name: name, isOurs: false) {
            let directory = try TemporaryDirectory(prefix: "outbox-compare-raw")
            let step = try makeStep(directory)
            return Session(
                run: { seconds in
                    try await runTimedBlocking(seconds: seconds) { _ in
                        let start = monotonicNanoseconds()
                        try step()
                        let elapsed = monotonicNanoseconds() - start
                        return OperationTimes(latencies: [UInt64](repeating: elapsed, count: group))
                    }
                },
                close: { directory.remove() })
        }
    }
}
