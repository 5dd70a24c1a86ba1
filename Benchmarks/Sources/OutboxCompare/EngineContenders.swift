import Foundation
import OutboxBenchSupport
import OutboxLog

/// The engine rows: `OutboxLog` alone against RocksDB, the engine people
/// pick for a durable write-ahead log, with the same records: 16-byte
/// sequential keys and 256-byte values.
enum EngineContenders {
    static let keyBytes = 16
    static let valueBytes = 256

    /// The bytes one record takes in our log (frame included): what the
    /// raw loops of the engine rows write per operation.
    static var recordBytes: Int {
        LogWrite.value(LogKey([UInt8](repeating: 0, count: keyBytes)), [UInt8](repeating: 0, count: valueBytes)).frameSize
    }

    /// Our engine with its default configuration: `writers` tasks each
    /// `put` a fresh sequential key, awaited at `durability` before the next.
    static func ours(_ name: String, durability: Durability, writers: Int) -> Contender {
        let value = [UInt8](repeating: 0x5A, count: valueBytes)
        return Contender(name: name, isOurs: true) {
            let directory = try TemporaryDirectory(prefix: "outbox-compare-engine")
            let log = try await OutboxLog.open(at: directory.filePath.appending("log"))
            return Session(
                run: { seconds in
                    try await runTimed(producers: writers, seconds: seconds) { writer, iteration in
                        let key = sequentialKey(writer: writer, iteration: iteration)
                        return try await OperationTimes.time { try await log.put(key, value, durability: durability) }
                    }
                },
                close: {
                    try await log.close()
                    directory.remove()
                })
        }
    }

    /// A 16-byte key that sorts in write order per writer: the writer, then
    /// the iteration, big-endian (as `db_bench`'s `fillseq` writes keys in
    /// order).
    private static func sequentialKey(writer: Int, iteration: Int) -> LogKey {
        var bytes = [UInt8](repeating: 0, count: keyBytes)
        for index in 0..<8 {
            bytes[7 - index] = UInt8(truncatingIfNeeded: UInt64(writer) >> (8 * index))
            bytes[15 - index] = UInt8(truncatingIfNeeded: UInt64(iteration) >> (8 * index))
        }
        return LogKey(bytes)
    }

    /// RocksDB through Debian's `db_bench` (package `rocksdb-tools`), or
    /// `nil` if it is not installed: `fillseq` into a fresh database with
    /// `threads` threads, `--sync=1` for `durable` (every write waits for
    /// its WAL sync; threads share syncs through RocksDB's group commit)
    /// and `--sync=0` for `written` (each write goes to the WAL in the page
    /// cache: it survives an app kill).
    static func rocksDB(_ name: String, durability: Durability, threads: Int) -> Contender? {
        guard let executable = RocksDBBench.executable else { return nil }
        let bench = RocksDBBench(executable: executable, sync: durability == .durable, threads: threads)
        return Contender(name: name, isOurs: false) {
            let directory = try TemporaryDirectory(prefix: "outbox-compare-rocksdb")
            return Session(
                run: { seconds in try await bench.run(seconds: seconds, in: directory.filePath.appending("db").string) },
                close: { directory.remove() })
        }
    }
}
