import Foundation
import Outbox
import OutboxBenchSupport
import OutboxLog

// MARK: - Drain

/// A drainer drains `entries` entries and returns the seconds it took.
private typealias Drainer = (name: String, isOurs: Bool, entries: Int, run: (Int) async throws -> Double)

/// Drains `entries` pending entries with a handler that succeeds at once:
/// our dispatcher over LogOutboxStore (durable acknowledgements) at its
/// default concurrency and at 64, and SQLite (FULL) claiming batches and
/// deleting each delivered row in its own transaction.
func runDrain(entries: Int, rounds: Int, only: Set<String>? = nil) async throws -> Comparison {
    progress("▸ drain: \(entries) entries, \(rounds) round(s)")
    let drainers = selectDrainers(entries: entries, only: only)
    let throughputs = try await drainInRounds(drainers, rounds: rounds)
    return Comparison(
        id: "drain", title: "Drain with a handler that succeeds at once (entries/s)",
        detail: "Pending 256-byte entries (\(drainers.map { "\($0.name): \($0.entries)" }.joined(separator: "; "))); the clock runs from the first claim to the last acknowledgement; \(rounds) round(s), order rotated.",
        unit: "entries/s", results: drainResults(drainers, throughputs: throughputs, rounds: rounds))
}

/// The drainers `only` names (all of them when it is nil), ours at its
/// defaults first: the others' ratios are against it.
private func selectDrainers(entries: Int, only: Set<String>?) -> [Drainer] {
    let payload = Workload.jsonPayload(size: 256)
    let text = String(decoding: payload, as: UTF8.self)
    let all: [(String, Drainer)] = [
        ("c4", ("ours: dispatcher, 4 concurrent (defaults: success written)", true, entries, { try await drainWithDispatcher(concurrency: 4, entries: $0) })),
        ("c64", ("ours: dispatcher, 64 concurrent", false, entries, { try await drainWithDispatcher(concurrency: 64, entries: $0) })),
        ("c4d", ("ours: dispatcher, 4 concurrent, success durable", false, entries, { try await drainWithDispatcher(concurrency: 4, entries: $0, successDurability: .durable) })),
        ("c64d", ("ours: dispatcher, 64 concurrent, success durable", false, entries, { try await drainWithDispatcher(concurrency: 64, entries: $0, successDurability: .durable) })),
        ("sqlite", ("SQLite FULL: batch claim + DELETE per entry, 4 workers", false, entries, { try await drainSQLite(workers: 4, entries: $0, payload: text) })),
    ]
    return all.filter { only?.contains($0.0) ?? true }.map(\.1)
}

/// Runs every drainer once a round, starting one further along each round;
/// returns each drainer's entries/s, one value a round.
private func drainInRounds(_ drainers: [Drainer], rounds: Int) async throws -> [[Double]] {
    var throughputs = Array(repeating: [Double](), count: drainers.count)
    for round in 0..<rounds {
        for offset in drainers.indices {
            let index = (round + offset) % drainers.count
            let count = drainers[index].entries
            let seconds = try await drainers[index].run(count)
            throughputs[index].append(Double(count) / seconds)
            progress("    round \(round + 1)/\(rounds) \(drainers[index].name): \(count) entries, \(format(Double(count) / seconds)) entries/s")
        }
    }
    return throughputs
}

/// One result a drainer: the median of its rounds and, for the others, the
/// median of the per-round ratios of the first drainer (when it is ours) to it.
private func drainResults(_ drainers: [Drainer], throughputs: [[Double]], rounds: Int) -> [ContenderResult] {
    drainers.indices.map { index in
        ContenderResult(
            name: drainers[index].name, isOurs: drainers[index].isOurs, throughput: median(throughputs[index]),
            roundThroughputs: throughputs[index], p50Micros: nil, p99Micros: nil,
            oursOverThis: drainers[index].isOurs || !drainers[0].isOurs
                ? nil : median(zip(throughputs[0], throughputs[index]).map { $0 / $1 }),
            operations: drainers[index].entries * rounds)
    }
}

/// Our dispatcher over a LogOutboxStore preloaded with `entries` entries:
/// the seconds one flush takes to deliver them all.
private func drainWithDispatcher(
    concurrency: Int, entries: Int, successDurability: Durability = .written
) async throws -> Double {
    let directory = try TemporaryDirectory(prefix: "outbox-compare-drain")
    defer { directory.remove() }
    try await Workload.preloadStore(root: directory.filePath, count: entries)
    var storeConfiguration = OutboxStoreConfiguration()
    storeConfiguration.unscopedDelivery = .concurrent  // as SQLite's drain: independent writes
    storeConfiguration.successDurability = successDurability
    let store = try await LogOutboxStore.open(
        root: directory.filePath, partition: Workload.partition, configuration: storeConfiguration)
    var configuration = OutboxDispatcherConfiguration()
    configuration.maximumConcurrentDeliveries = concurrency
    configuration.maximumAge = nil
    let handler = ClosureOutboxHandler { _ in .delivered(serverID: nil) }
    let dispatcher = OutboxDispatcher(store: store, handlers: ["send_message": handler], configuration: configuration)
    let start = monotonicNanoseconds()
    let report = await dispatcher.flush()
    let seconds = Double(monotonicNanoseconds() - start) / 1e9
    await dispatcher.stop()
    let left = try await store.summary().unsent
    try await store.close()
    guard report.delivered == entries, left == 0, report.errors.isEmpty else {
        throw BenchError("drain delivered \(report.delivered) of \(entries), \(left) left, errors: \(report.errors.prefix(3))")
    }
    return seconds
}

/// SQLite (FULL) preloaded with `entries` rows of `payload`: the seconds it
/// takes to claim them in batches and delete each one, `workers` at a time.
private func drainSQLite(workers: Int, entries: Int, payload text: String) async throws -> Double {
    let directory = try TemporaryDirectory(prefix: "outbox-compare-drain-sqlite")
    defer { directory.remove() }
    let database = try SQLiteOutbox(path: directory.appending("outbox.sqlite"), synchronous: .full)
    try database.preload(count: entries, payload: text)
    let start = monotonicNanoseconds()
    while true {
        let claimed = try await database.claimDue(limit: 64)
        if claimed.isEmpty { break }
        // Deliver (at once) and acknowledge, `workers` at a time.
        try await withThrowingTaskGroup(of: Void.self) { group in
            var iterator = claimed.makeIterator()
            for _ in 0..<workers {
                guard let id = iterator.next() else { break }
                group.addTask { try await database.acknowledge(id) }
            }
            while try await group.next() != nil {
                if let id = iterator.next() { group.addTask { try await database.acknowledge(id) } }
            }
        }
    }
    let seconds = Double(monotonicNanoseconds() - start) / 1e9
    let left = try database.pendingCount()
    try database.close()
    guard left == 0 else { throw BenchError("SQLite drain left \(left) rows") }
    return seconds
}
