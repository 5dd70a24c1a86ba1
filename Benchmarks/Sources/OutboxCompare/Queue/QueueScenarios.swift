import Foundation
import OutboxBenchSupport

/// The queue rows (`--only queue`): our `DurableQueue` against the queues an
/// app or a server would otherwise embed — a Tape-style single file, a
/// SQLite table, RocksDB keys — on the same elements and the same harness.
enum QueueScenarios {
    static let elementBytes = 256
    static let latencyPace = 1_000.0

    /// The rows in the order they run and are reported.
    static func specifications(quick: Bool) -> [ComparisonSpecification] {
        let prefill = quick ? 50_000 : 200_000
        let common = "Elements of \(elementBytes) bytes. Ours: `DurableQueue` with its default configuration; each consumer is a named consumer reading `batches(max: 256)` (it waits for appends) and committing each batch. Peers: their consumers compete (a take removes what it returns, up to 256 at a time), and wait on an in-process doorbell rung after every append, so no one polls. Every element reaches every one of our consumers, one of theirs."
        func row(_ id: String, _ title: String, _ detail: String, _ workload: QueueWorkload) -> ComparisonSpecification {
            ComparisonSpecification(
                id: id, title: title, detail: detail + " " + common, contenders: contenders(workload), freshPerRound: true)
        }
        func load(_ producers: Int, _ consumers: Int, _ durability: QueueDurability, pace: Double? = nil) -> QueueWorkload {
            QueueWorkload(
                producers: producers, consumers: consumers, durability: durability, pace: pace, prefill: 0,
                elementBytes: elementBytes)
        }
        let throughput = "Elements per second: appended during the round, over the time until the consumers held them all; latency is the append call's, at the row's durability (removals and commits too)."
        let latency = "One producer appends \(Int(latencyPace)) elements per second; latency is from the append returning to the consumer holding the element (0 when the consumer held it first)."
        var consume = load(0, 1, .written)
        consume.prefill = prefill
        return [
            row("queue.written.produce", "queue, written: 1 producer, no consumer",
                "Appends only, each awaited at written (the page cache).", load(1, 0, .written)),
            row("queue.written.consume", "queue, written: 1 consumer of a filled queue",
                "The queue is filled with \(prefill) elements before the clock starts (they are in the page cache); elements per second until the consumer holds them all, removing or committing each batch at written.",
                consume),
            row("queue.written.1p1c", "queue, written: 1 producer, 1 consumer", throughput, load(1, 1, .written)),
            row("queue.durable.1p1c", "queue, durable: 1 producer, 1 consumer", throughput, load(1, 1, .durable)),
            row("queue.written.8p4c", "queue, written: 8 producers, 4 consumers", throughput, load(8, 4, .written)),
            row("queue.durable.8p4c", "queue, durable: 8 producers, 4 consumers", throughput, load(8, 4, .durable)),
            row("queue.written.latency", "queue, written: append to consume at \(Int(latencyPace))/s", latency,
                load(1, 1, .written, pace: latencyPace)),
            row("queue.durable.latency", "queue, durable: append to consume at \(Int(latencyPace))/s", latency,
                load(1, 1, .durable, pace: latencyPace)),
        ]
    }

    /// Ours and each peer that can run here, on `workload`.
    static func contenders(_ workload: QueueWorkload) -> [Contender] {
        let durable = workload.durability == .durable
        let level = workload.durability
        var contenders = [
            QueueContenders.ours(durable ? "ours (DurableQueue)" : "ours (DurableQueue, written)", workload),
            QueueContenders.peer(durable ? "Tape-style QueueFile (O_DSYNC)" : "Tape-style QueueFile", workload) { directory in
                try TapeStyleQueue(path: directory.appending("queue.tape"), durability: level)
            },
            QueueContenders.peer(durable ? "SQLite FULL" : "SQLite NORMAL", workload) { directory in
                try SQLiteQueue(path: directory.appending("queue.sqlite"), durability: level)
            },
        ]
        if let library = RocksDBQueue.library {
            let name = "RocksDB \(RocksDBBench.version) sync=\(durable ? 1 : 0)"
            contenders.append(
                QueueContenders.peer(name, workload) { directory in
                    try RocksDBQueue(directory: directory.path, durability: level, library: library)
                })
        }
        return contenders
    }
}
