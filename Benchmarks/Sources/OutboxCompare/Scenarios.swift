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
    var reported = Array(repeating: [ReportedLatency](), count: contenders.count)
    for round in 0..<rounds {
        let order = contenders.indices.map { (round + $0) % contenders.count }
        for index in order {
            let session = try await session(index)
            let run = try await session.run(seconds)
            if freshPerRound { try await session.close() }
            throughputs[index].append(run.throughput)
            latencies[index].append(contentsOf: run.latencies)
            if let latency = run.reportedLatency { reported[index].append(latency) }
            operations[index] += run.operations
            progress(
                "    round \(round + 1)/\(rounds) \(contenders[index].name): \(format(run.throughput)) ops/s"
                    + " (p50 \(micros(run))) ")
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
        // A system timed by its own tool: the median of its rounds' percentiles.
        let own = reported[index]
        let (p50, p99) = latencies[index].count > 0 || own.isEmpty
            ? (Double(latencies[index].percentile(50)), Double(latencies[index].percentile(99)))
            : (median(own.map(\.p50Nanoseconds)), median(own.map(\.p99Nanoseconds)))
        results.append(
            ContenderResult(
                name: contenders[index].name, isOurs: contenders[index].isOurs, throughput: median(throughputs[index]),
                roundThroughputs: throughputs[index], p50Micros: p50 / 1000, p99Micros: p99 / 1000, oursOverThis: ratio,
                operations: operations[index]))
    }
    return Comparison(id: id, title: title, detail: detail, unit: "ops/s", results: results)
}

private func micros(_ run: TimedRun) -> String {
    var samples = run.latencies
    let nanoseconds = samples.count == 0 ? run.reportedLatency?.p50Nanoseconds ?? 0 : Double(samples.percentile(50))
    return String(format: "%.1f µs", nanoseconds / 1000)
}

func format(_ value: Double) -> String {
    if value >= 100 { return String(Int(value.rounded())) }
    if value >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.2f", value)
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
