import Foundation
import Outbox
import OutboxBenchSupport
import OutboxLog

func progress(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

// MARK: - Side-by-side comparisons

/// Runs every contender for `rounds` rounds of `seconds` each, rotating the
/// order every round, after a warm-up; throughput is the median of the
/// rounds, ratios are per round (ours ÷ other in the same round), then the median.
func runComparison(
    id: String, title: String, detail: String, contenders: [Contender], freshPerRound: Bool,
    rounds: Int, seconds: Double, warmup: Double
) async throws -> Comparison {
    progress("▸ \(id): \(title)")
    var sessions: [Session?] = Array(repeating: nil, count: contenders.count)
    if !freshPerRound {
        for (index, contender) in contenders.enumerated() { sessions[index] = try await contender.open() }
    }
    func session(_ index: Int) async throws -> Session {
        if let session = sessions[index] { return session }
        return try await contenders[index].open()
    }
    // Warm-up: caches, page cache, file creation, thread start-up.
    for index in contenders.indices where warmup > 0 {
        let session = try await session(index)
        _ = try await session.run(warmup)
        if freshPerRound { try await session.close() }
    }
    var throughputs = Array(repeating: [Double](), count: contenders.count)
    var latencies = Array(repeating: Samples(), count: contenders.count)
    var operations = Array(repeating: 0, count: contenders.count)
    for round in 0..<rounds {
        let order = contenders.indices.map { (round + $0) % contenders.count }
        for index in order {
            let session = try await session(index)
            let run = try await session.run(seconds)
            if freshPerRound { try await session.close() }
            throughputs[index].append(run.throughput)
            latencies[index].append(contentsOf: run.latencies)
            operations[index] += run.operations
            progress(
                "    round \(round + 1)/\(rounds) \(contenders[index].name): \(format(run.throughput)) ops/s"
                    + " (p50 \(micros(run.latencies))) ")
        }
    }
    for session in sessions { try await session?.close() }
    let oursIndex = contenders.firstIndex { $0.isOurs }
    var results: [ContenderResult] = []
    for index in contenders.indices {
        var ratio: Double?
        if let oursIndex, oursIndex != index {
            ratio = median(zip(throughputs[oursIndex], throughputs[index]).map { $0 / max($1, 1e-9) })
        }
        results.append(
            ContenderResult(
                name: contenders[index].name, isOurs: contenders[index].isOurs, throughput: median(throughputs[index]),
                roundThroughputs: throughputs[index], p50Micros: Double(latencies[index].percentile(50)) / 1000,
                p99Micros: Double(latencies[index].percentile(99)) / 1000, oursOverThis: ratio,
                operations: operations[index]))
    }
    return Comparison(id: id, title: title, detail: detail, unit: "ops/s", results: results)
}

private func micros(_ samples: Samples) -> String {
    var samples = samples
    return String(format: "%.1f µs", Double(samples.percentile(50)) / 1000)
}

func format(_ value: Double) -> String {
    if value >= 100 { return String(Int(value.rounded())) }
    if value >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.2f", value)
}

// MARK: - Drain

/// Drains `entries` pending entries with a handler that succeeds at once:
/// our dispatcher over LogOutboxStore (durable acknowledgements) at its
/// default concurrency and at 64, and SQLite (FULL) claiming batches and
/// deleting each delivered row in its own transaction.
func runDrain(entries: Int, rounds: Int, only: Set<String>? = nil) async throws -> Comparison {
    progress("▸ drain: \(entries) entries, \(rounds) round(s)")
    let payload = Workload.jsonPayload(size: 256)
    let text = String(decoding: payload, as: UTF8.self)
    /// A drainer drains `entries` entries and returns the seconds it took.
    typealias Drainer = (name: String, isOurs: Bool, entries: Int, run: (Int) async throws -> Double)

    func dispatcher(concurrency: Int, entries: Int, successDurability: Durability = .written) async throws -> Double {
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

    func sqlite(workers: Int, entries: Int) async throws -> Double {
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

    let all: [(String, Drainer)] = [
        ("c4", ("ours: dispatcher, 4 concurrent (defaults: success written)", true, entries, { try await dispatcher(concurrency: 4, entries: $0) })),
        ("c64", ("ours: dispatcher, 64 concurrent", false, entries, { try await dispatcher(concurrency: 64, entries: $0) })),
        ("c4d", ("ours: dispatcher, 4 concurrent, success durable", false, entries, { try await dispatcher(concurrency: 4, entries: $0, successDurability: .durable) })),
        ("c64d", ("ours: dispatcher, 64 concurrent, success durable", false, entries, { try await dispatcher(concurrency: 64, entries: $0, successDurability: .durable) })),
        ("sqlite", ("SQLite FULL: batch claim + DELETE per entry, 4 workers", false, entries, { try await sqlite(workers: 4, entries: $0) })),
    ]
    let drainers = all.filter { only?.contains($0.0) ?? true }.map(\.1)
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
    let results = drainers.indices.map { index in
        ContenderResult(
            name: drainers[index].name, isOurs: drainers[index].isOurs, throughput: median(throughputs[index]),
            roundThroughputs: throughputs[index], p50Micros: nil, p99Micros: nil,
            oursOverThis: drainers[index].isOurs || !drainers[0].isOurs
                ? nil : median(zip(throughputs[0], throughputs[index]).map { $0 / $1 }),
            operations: drainers[index].entries * rounds)
    }
    return Comparison(
        id: "drain", title: "Drain with a handler that succeeds at once (entries/s)",
        detail: "Pending 256-byte entries (\(drainers.map { "\($0.name): \($0.entries)" }.joined(separator: "; "))); the clock runs from the first claim to the last acknowledgement; \(rounds) round(s), order rotated.",
        unit: "entries/s", results: results)
}

// MARK: - Recovery (the engine)

/// Opens logs of `size` 256-byte records: warm (page cache) and cold
/// (pages dropped with posix_fadvise); MB/s = bytes scanned ÷ open time.
func runRecovery(sizes: [Int], warmOpens: Int) async throws -> [RecoveryResult] {
    var results: [RecoveryResult] = []
    for size in sizes {
        progress("▸ recovery: \(size) records")
        let directory = try TemporaryDirectory(prefix: "outbox-compare-recovery")
        defer { directory.remove() }
        let buildStart = monotonicNanoseconds()
        try await Workload.makeLog(at: directory.filePath, count: size)
        let buildSeconds = Double(monotonicNanoseconds() - buildStart) / 1e9

        var warm: [Double] = []
        var bytes: Int64 = 0
        var segments = 0
        var perKey: Double?
        // The first open warms the page cache (the files were just written).
        for attempt in 0..<(warmOpens + 1) {
            let before = heapBytesInUse()
            let start = monotonicNanoseconds()
            let log = try await OutboxLog.open(at: directory.filePath)
            let seconds = Double(monotonicNanoseconds() - start) / 1e9
            let after = heapBytesInUse()
            let report = log.recoveryReport
            guard report.liveKeys == size else { throw BenchError("recovered \(report.liveKeys) keys of \(size)") }
            bytes = report.bytes
            segments = report.segments
            if attempt > 0 { warm.append(seconds) }
            if attempt == 1, let before, let after { perKey = Double(after - before) / Double(size) }
            try await log.close()
        }
        evictFromPageCache(directory.path)
        let coldStart = monotonicNanoseconds()
        let log = try await OutboxLog.open(at: directory.filePath)
        let coldSeconds = Double(monotonicNanoseconds() - coldStart) / 1e9
        try await log.close()
        let warmSeconds = median(warm)
        let result = RecoveryResult(
            records: size, bytes: bytes, segments: segments, buildSeconds: buildSeconds, warmSeconds: warmSeconds,
            warmMBps: Double(bytes) / warmSeconds / 1e6, coldSeconds: coldSeconds,
            coldMBps: Double(bytes) / coldSeconds / 1e6, indexBytesPerKey: perKey)
        progress(
            "    \(size) records, \(bytes / 1_000_000) MB: warm \(format(result.warmMBps)) MB/s, cold \(format(result.coldMBps ?? 0)) MB/s, index \(format(perKey ?? 0)) B/key"
        )
        results.append(result)
    }
    return results
}

// MARK: - Queue depth

/// Per-enqueue cost with `depth` entries pending: ours (durable, one
/// producer; and buffered, the CPU cost), SQLite FULL, and the JSON file up
/// to the depths it can reach.
func runDepth(
    depths: [Int], jsonDepths: Set<Int>, durableSamples: Int, bufferedSamples: Int, sqliteSamples: Int,
    jsonOperationBudget: Double
) async throws -> [DepthResult] {
    let payload = Workload.jsonPayload(size: 256)
    let text = String(decoding: payload, as: UTF8.self)
    var results: [DepthResult] = []
    for depth in depths {
        progress("▸ depth: \(depth) pending")
        let directory = try TemporaryDirectory(prefix: "outbox-compare-depth")
        defer { directory.remove() }

        // Ours.
        let preload = try await Workload.preloadStore(root: directory.filePath, count: depth)
        evictFromPageCache(directory.path)
        // Two times per open: until `open` returns (the store answers
        // enqueues; a store reopened from its checkpoint loads the rest in
        // the background), and until `summary()` answers (it waits for
        // that load: the whole queue is in memory).
        var start = monotonicNanoseconds()
        let coldOpen: Double, coldLoaded: Double
        do {
            // In its own scope: the closed store must be gone before the heap is measured.
            let store = try await LogOutboxStore.open(root: directory.filePath, partition: Workload.partition)
            coldOpen = Double(monotonicNanoseconds() - start) / 1e9
            _ = try await store.summary()
            coldLoaded = Double(monotonicNanoseconds() - start) / 1e9
            try await store.close()
        }
        let heapBefore = heapBytesInUse()
        start = monotonicNanoseconds()
        var store = try await LogOutboxStore.open(root: directory.filePath, partition: Workload.partition)
        let warmOpen = Double(monotonicNanoseconds() - start) / 1e9
        let opened = try await store.summary().unsent
        let warmLoaded = Double(monotonicNanoseconds() - start) / 1e9
        // After the load: the heap of the whole queue, not of an open that
        // returned before it.
        let heapAfter = heapBytesInUse()
        var perEntry: Double?
        if let heapBefore, let heapAfter { perEntry = Double(heapAfter - heapBefore) / Double(depth) }
        guard opened == depth else { throw BenchError("the store reopened with \(opened) of \(depth) entries") }
        var durable = Samples()
        for index in 0..<(durableSamples + 20) {
            let begin = monotonicNanoseconds()
            _ = try await store.enqueue(Workload.request(payload: payload))
            if index >= 20 { durable.append(monotonicNanoseconds() - begin) }
        }
        try await store.close()
        store = try await LogOutboxStore.open(
            root: directory.filePath, partition: Workload.partition,
            configuration: Workload.storeConfiguration(enqueue: .buffered))
        var buffered = Samples()
        for index in 0..<(bufferedSamples + 100) {
            let begin = monotonicNanoseconds()
            _ = try await store.enqueue(Workload.request(payload: payload))
            if index >= 100 { buffered.append(monotonicNanoseconds() - begin) }
        }
        try await store.close()
        directory.remove()

        var result = DepthResult(
            depth: depth, oursPreloadSeconds: preload, oursOpenSeconds: warmOpen, oursOpenColdSeconds: coldOpen,
            oursLoadedSeconds: warmLoaded, oursLoadedColdSeconds: coldLoaded,
            oursHeapBytesPerEntry: perEntry, oursDurableP50Micros: Double(durable.percentile(50)) / 1000,
            oursDurableMeanMicros: durable.mean / 1000, oursBufferedP50Micros: Double(buffered.percentile(50)) / 1000,
            oursBufferedMeanMicros: buffered.mean / 1000)
        progress(
            "    ours: preload \(format(preload)) s, open \(format(warmOpen)) s (cold \(format(coldOpen)) s), "
                + "loaded \(format(warmLoaded)) s (cold \(format(coldLoaded)) s), "
                + "durable p50 \(format(result.oursDurableP50Micros)) µs, buffered mean \(format(result.oursBufferedMeanMicros)) µs, "
                + "heap \(format(perEntry ?? 0)) B/entry")

        // SQLite FULL.
        do {
            let sqliteDirectory = try TemporaryDirectory(prefix: "outbox-compare-depth-sqlite")
            defer { sqliteDirectory.remove() }
            let path = sqliteDirectory.appending("outbox.sqlite")
            let database = try SQLiteOutbox(path: path, synchronous: .full)
            try await onDedicatedThread {
                // A bigger page cache for the bulk load only; the measurement
                // below runs on a fresh connection with SQLite's default.
                try database.pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA cache_size = -262144") }
                try database.preload(count: depth, payload: text)
            }
            try database.close()
            let openStart = monotonicNanoseconds()
            let reopened = try SQLiteOutbox(path: path, synchronous: .full)
            _ = try reopened.firstDue()
            result.sqliteOpenSeconds = Double(monotonicNanoseconds() - openStart) / 1e9
            var samples = Samples()
            for index in 0..<(sqliteSamples + 10) {
                let begin = monotonicNanoseconds()
                _ = try await reopened.enqueue(payload: text)
                if index >= 10 { samples.append(monotonicNanoseconds() - begin) }
            }
            try reopened.close()
            result.sqliteFullP50Micros = Double(samples.percentile(50)) / 1000
            result.sqliteFullMeanMicros = samples.mean / 1000
            progress("    SQLite FULL: p50 \(format(result.sqliteFullP50Micros!)) µs")
        }

        // The JSON file, where it is practical.
        if jsonDepths.contains(depth) {
            let jsonDirectory = try TemporaryDirectory(prefix: "outbox-compare-depth-json")
            defer { jsonDirectory.remove() }
            let measured = try await onDedicatedThread { () -> (Samples, Double, Int) in
                let outbox = JSONFileOutbox(path: jsonDirectory.appending("outbox.json"))
                try outbox.preload(count: depth, payload: text)
                let loader = JSONFileOutbox(path: outbox.path)
                let loadStart = monotonicNanoseconds()
                let bytes = try loader.load()
                let load = Double(monotonicNanoseconds() - loadStart) / 1e9
                var samples = Samples()
                let budget = monotonicNanoseconds() + UInt64(jsonOperationBudget * 1e9)
                while samples.count < 3 || (samples.count < 200 && monotonicNanoseconds() < budget) {
                    let begin = monotonicNanoseconds()
                    try loader.enqueue(payload: text)
                    samples.append(monotonicNanoseconds() - begin)
                }
                return (samples, load, bytes)
            }
            var samples = measured.0
            result.jsonP50Micros = Double(samples.percentile(50)) / 1000
            result.jsonMeanMicros = samples.mean / 1000
            result.jsonLoadSeconds = measured.1
            result.jsonFileBytes = measured.2
            progress("    JSON file: p50 \(format(result.jsonP50Micros!)) µs over \(samples.count) enqueues")
        }
        results.append(result)
    }
    return results
}

// MARK: - Producers

/// Durable enqueue throughput against the number of concurrent producers:
/// ours and SQLite FULL, side by side at each count.
func runProducers(counts: [Int], rounds: Int, seconds: Double) async throws -> [ProducerPoint] {
    let payload = Workload.jsonPayload(size: 256)
    var points: [ProducerPoint] = []
    for count in counts {
        let comparison = try await runComparison(
            id: "producers.\(count)", title: "durable enqueue, \(count) producer(s)", detail: "",
            contenders: [
                Contenders.ours("ours", durability: .durable, producers: count, operation: .enqueue, payload: payload),
                Contenders.sqlite("SQLite FULL (GRDB async)", synchronous: .full, producers: count, operation: .enqueue, payload: payload),
            ], freshPerRound: true, rounds: rounds, seconds: seconds, warmup: min(0.2, seconds))
        let ours = comparison.results[0]
        let sqlite = comparison.results[1]
        points.append(
            ProducerPoint(
                producers: count, ours: ours.throughput, sqliteFull: sqlite.throughput,
                oursOverSQLite: sqlite.oursOverThis ?? .nan, oursP50Micros: ours.p50Micros ?? 0,
                oursP99Micros: ours.p99Micros ?? 0, sqliteP50Micros: sqlite.p50Micros ?? 0))
    }
    return points
}
