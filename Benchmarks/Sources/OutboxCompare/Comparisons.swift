import OutboxBenchSupport
import OutboxLog

/// One side-by-side workload of the compare section.
struct ComparisonSpecification {
    let id, title, detail: String
    let contenders: [Contender]
    /// A fresh queue every round (the queue grows: enqueue only).
    let freshPerRound: Bool
}

/// A durability level of ours and the SQLite `synchronous` setting it is
/// held against, with the contender names the results files use.
struct ComparedLevel {
    let durability: Durability
    let ours: String
    let sqlite: String
    let synchronous: SQLiteOutbox.Synchronous

    static let durable = ComparedLevel(
        durability: .durable, ours: "ours (LogOutboxStore)", sqlite: "SQLite FULL", synchronous: .full)
    static let written = ComparedLevel(
        durability: .written, ours: "ours (LogOutboxStore, written)", sqlite: "SQLite NORMAL", synchronous: .normal)
}

/// The comparisons of the compare section, in the order they run and are reported.
func comparisonSpecifications(payload: [UInt8], recordBytes: Int) -> [ComparisonSpecification] {
    func ours(_ level: ComparedLevel, producers: Int, _ operation: Operation) -> Contender {
        Contenders.ours(level.ours, durability: level.durability, producers: producers, operation: operation, payload: payload)
    }
    // GRDB's async API; with one producer also its blocking API on a thread of its own.
    func sqlite(_ level: ComparedLevel, producers: Int, _ operation: Operation) -> [Contender] {
        let viaAsync = Contenders.sqlite(
            "\(level.sqlite) (GRDB async)", synchronous: level.synchronous, producers: producers, operation: operation,
            payload: payload)
        guard producers == 1 else { return [viaAsync] }
        return [viaAsync, Contenders.sqliteBlocking(
            "\(level.sqlite) (GRDB blocking, own thread)", synchronous: level.synchronous, operation: operation,
            payload: payload)]
    }
    let syncLoop = Contenders.raw("raw write+fdatasync loop", recordSize: recordBytes, sync: true)
    let writeLoop = Contenders.raw("raw write loop (no sync)", recordSize: recordBytes, sync: false)
    return [
        ComparisonSpecification(
            id: "durable.1p.enqueue+ack", title: "durable, 1 producer: enqueue then acknowledge",
            detail: "Each entry is enqueued (durable), then acknowledged: ours starts the attempt (written) and records the success (durable: tombstone + completion in one batch); SQLite runs one INSERT transaction and one DELETE transaction; the JSON file is rewritten twice. Each enqueue and each acknowledgement counts as one operation.",
            contenders: [ours(.durable, producers: 1, .enqueueThenAcknowledge)]
                + sqlite(.durable, producers: 1, .enqueueThenAcknowledge)
                + [
                    Contenders.jsonFile("JSON file (temp + fsync + rename)", operation: .enqueueThenAcknowledge, payload: payload),
                    syncLoop,
                ],
            freshPerRound: false),
        ComparisonSpecification(
            id: "durable.1p.enqueue", title: "durable, 1 producer: enqueue only",
            detail: "Durable enqueues from one producer, each awaited before the next; a fresh queue every round. Two raw limits: appending to a growing file, and overwriting a file allocated ahead (`posix_fallocate`: no size change for the sync to journal).",
            contenders: [
                ours(.durable, producers: 1, .enqueue),
                Contenders.ours(
                    "ours, segments zero-filled 1 MiB ahead (preallocation, off by default)", durability: .durable,
                    producers: 1, operation: .enqueue, payload: payload, preallocation: 1 << 20),
            ]
                + sqlite(.durable, producers: 1, .enqueue)
                + [syncLoop, Contenders.rawPreallocated("raw overwrite+fdatasync, preallocated file", recordSize: recordBytes)],
            freshPerRound: true),
        ComparisonSpecification(
            id: "durable.64p.enqueue", title: "durable, 64 concurrent producers: enqueue only",
            detail: "64 tasks enqueue concurrently (durable); GRDB serializes SQLite's writes, which is what an app gets. The raw line writes 64 records with one write(2) and one fdatasync: a perfect group commit.",
            contenders: [ours(.durable, producers: 64, .enqueue)]
                + sqlite(.durable, producers: 64, .enqueue)
                + [Contenders.raw("raw: 64 records per write+fdatasync", recordSize: recordBytes, group: 64, sync: true)],
            freshPerRound: true),
        ComparisonSpecification(
            id: "written.1p.enqueue+ack", title: "written, 1 producer: enqueue then acknowledge",
            detail: "As the durable case, with every step `written` (survives an app kill, not a power loss) against SQLite's synchronous=NORMAL in WAL mode (commits are not synced).",
            contenders: [ours(.written, producers: 1, .enqueueThenAcknowledge)]
                + sqlite(.written, producers: 1, .enqueueThenAcknowledge) + [writeLoop],
            freshPerRound: false),
        ComparisonSpecification(
            id: "written.1p.enqueue", title: "written, 1 producer: enqueue only",
            detail: "Written enqueues from one producer; a fresh queue every round.",
            contenders: [ours(.written, producers: 1, .enqueue)] + sqlite(.written, producers: 1, .enqueue) + [writeLoop],
            freshPerRound: true),
        ComparisonSpecification(
            id: "written.64p.enqueue", title: "written, 64 concurrent producers: enqueue only",
            detail: "64 tasks enqueue concurrently (written); a fresh queue every round.",
            contenders: [ours(.written, producers: 64, .enqueue)] + sqlite(.written, producers: 64, .enqueue),
            freshPerRound: true),
    ]
}

/// The engine rows: `OutboxLog.put` against RocksDB's `db_bench fillseq`
/// (when `rocksdb-tools` is installed) and the raw loops, 16-byte keys and
/// 256-byte values, a fresh log or database every round.
func engineSpecifications() -> [ComparisonSpecification] {
    let record = EngineContenders.recordBytes
    func rocksDB(_ durability: Durability, threads: Int) -> [Contender] {
        let name = "RocksDB \(RocksDBBench.version) db_bench fillseq --sync=\(durability == .durable ? 1 : 0)"
            + (threads > 1 ? " --threads=\(threads)" : "")
        return EngineContenders.rocksDB(name, durability: durability, threads: threads).map { [$0] } ?? []
    }
    let detail = "OutboxLog alone (its default configuration): each writer puts a fresh 16-byte key with a 256-byte value and awaits it before the next. RocksDB runs its own benchmark tool (`db_bench`, fillseq, no compression) in a fresh database each round; its latencies are the percentiles db_bench reports, the median over the rounds. The raw loops write our record (\(record) bytes)."
    return [
        ComparisonSpecification(
            id: "engine.durable.1w.append", title: "engine, durable, 1 writer: append",
            detail: detail + " Durable: each put waits for its sync (RocksDB: --sync=1).",
            contenders: [EngineContenders.ours("ours (OutboxLog)", durability: .durable, writers: 1)]
                + rocksDB(.durable, threads: 1)
                + [
                    Contenders.raw("raw write+fdatasync loop", recordSize: record, sync: true),
                    Contenders.rawPreallocated("raw overwrite+fdatasync, preallocated file", recordSize: record),
                ],
            freshPerRound: true),
        ComparisonSpecification(
            id: "engine.durable.64w.append", title: "engine, durable, 64 writers: append",
            detail: detail + " 64 writers share syncs: our group commit against RocksDB's, 64 threads.",
            contenders: [EngineContenders.ours("ours (OutboxLog)", durability: .durable, writers: 64)]
                + rocksDB(.durable, threads: 64)
                + [Contenders.raw("raw: 64 records per write+fdatasync", recordSize: record, group: 64, sync: true)],
            freshPerRound: true),
        ComparisonSpecification(
            id: "engine.written.1w.append", title: "engine, written, 1 writer: append",
            detail: detail + " Written: in the page cache, surviving an app kill but not a power loss (RocksDB: --sync=0, the WAL written on every put).",
            contenders: [EngineContenders.ours("ours (OutboxLog, written)", durability: .written, writers: 1)]
                + rocksDB(.written, threads: 1)
                + [Contenders.raw("raw write loop (no sync)", recordSize: record, sync: false)],
            freshPerRound: true),
    ]
}
