import Foundation
import Outbox
import OutboxBenchSupport

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
        var result = try await measureOursAtDepth(
            depth, payload: payload, durableSamples: durableSamples, bufferedSamples: bufferedSamples)
        try await measureSQLiteAtDepth(depth, payload: text, samples: sqliteSamples, into: &result)
        // The JSON file, where it is practical.
        if jsonDepths.contains(depth) {
            try await measureJSONFileAtDepth(depth, payload: text, budget: jsonOperationBudget, into: &result)
        }
        results.append(result)
    }
    return results
}

/// Our store preloaded with `depth` entries: its open and load times, cold
/// and warm, the heap it holds per entry, and single enqueues, durable and
/// buffered.
private func measureOursAtDepth(
    _ depth: Int, payload: [UInt8], durableSamples: Int, bufferedSamples: Int
) async throws -> DepthResult {
    let directory = try TemporaryDirectory(prefix: "outbox-compare-depth")
    defer { directory.remove() }
    let preload = try await Workload.preloadStore(root: directory.filePath, count: depth)
    evictFromPageCache(directory.path)
    // Two times per open: until `open` returns (the store answers
    // enqueues; a store reopened from its checkpoint loads the rest in
    // the background), and until `summary()` answers (it waits for
    // that load: the whole queue is in memory).
    let (coldOpen, coldLoaded) = try await timeOpenAndLoad(directory)
    let heapBefore = heapBytesInUse()
    let start = monotonicNanoseconds()
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
    var durable = try await timeEnqueues(into: store, payload: payload, samples: durableSamples, discardingFirst: 20)
    try await store.close()
    store = try await LogOutboxStore.open(
        root: directory.filePath, partition: Workload.partition,
        configuration: Workload.storeConfiguration(enqueue: .buffered))
    var buffered = try await timeEnqueues(into: store, payload: payload, samples: bufferedSamples, discardingFirst: 100)
    try await store.close()
    directory.remove()

    let result = DepthResult(
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
    return result
}

/// Opens the store in `directory` and closes it: the seconds until `open`
/// returns and until `summary()` answers. A function of its own so that the
/// closed store is gone before the caller measures the heap.
private func timeOpenAndLoad(_ directory: TemporaryDirectory) async throws -> (open: Double, loaded: Double) {
    let start = monotonicNanoseconds()
    let store = try await LogOutboxStore.open(root: directory.filePath, partition: Workload.partition)
    let open = Double(monotonicNanoseconds() - start) / 1e9
    _ = try await store.summary()
    let loaded = Double(monotonicNanoseconds() - start) / 1e9
    try await store.close()
    return (open, loaded)
}

/// Times `samples` single enqueues into `store`, after `discardingFirst`
/// more whose times are dropped (the store warming up).
private func timeEnqueues(
    into store: LogOutboxStore, payload: [UInt8], samples: Int, discardingFirst warmup: Int
) async throws -> Samples {
    var times = Samples()
    for index in 0..<(samples + warmup) {
        let begin = monotonicNanoseconds()
        _ = try await store.enqueue(Workload.request(payload: payload))
        if index >= warmup { times.append(monotonicNanoseconds() - begin) }
    }
    return times
}

/// SQLite FULL preloaded with `depth` rows: the time to reopen it and single
/// enqueues on that fresh connection.
private func measureSQLiteAtDepth(
    _ depth: Int, payload text: String, samples sqliteSamples: Int, into result: inout DepthResult
) async throws {
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

/// The JSON file with `depth` entries: the time to load it, then enqueues,
/// each rewriting the whole file: at least 3, and up to 200 while `budget`
/// seconds last.
private func measureJSONFileAtDepth(
    _ depth: Int, payload text: String, budget jsonOperationBudget: Double, into result: inout DepthResult
) async throws {
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
