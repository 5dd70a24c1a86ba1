// The storage engine (OutboxLog): appends at every durability level, payload
// size and producer count; annotations and deletes; recovery; compaction;
// index memory.
//
//   cd Benchmarks && swift package benchmark --no-progress --target OutboxLogBenchmarks

import Benchmark
import Foundation
import OutboxBenchSupport
import OutboxLog
import OutboxSuiteSupport

let benchmarks: @Sendable () -> Void = {
    useSuiteDefaults()

    // MARK: append.<size>.<durability>.<producers>

    writeMatrix(
        "append", open: { _ in try await LogFixture.open() }, close: { try await $0.close() },
        write: { fixture, payload, durability in
            try await fixture.log.put(fixture.nextKey(), payload, durability: durability)
        })

    // MARK: Status updates and deletes

    // annotate: a 24-byte state record beside an existing 256-byte value
    // (what the outbox writes at each status change).
    for durability in [Durability.written, .durable] {
        let box = FixtureBox<LogFixture>()
        let keys = 20_000
        Benchmark(
            "annotate.24B.\(durability)",
            configuration: .init(
                maxIterations: keys,
                setup: { box.value = try await LogFixture.open(holding: keys) },
                teardown: { try await box.value?.close() })
        ) { benchmark in
            let fixture = box.unwrapped
            let state = [UInt8](repeating: 0x01, count: 24)
            try await fixture.log.annotate(Workload.entryKey(fixture.next() % keys), state, durability: durability)
        }
    }

    // delete: the tombstone of an existing key (an acknowledged entry).
    for durability in [Durability.written, .durable] {
        let box = FixtureBox<LogFixture>()
        let keys = 30_000
        Benchmark(
            "delete.\(durability)",
            configuration: .init(
                maxIterations: keys - 100,
                setup: { box.value = try await LogFixture.open(holding: keys) },
                teardown: { try await box.value?.close() })
        ) { benchmark in
            let fixture = box.unwrapped
            guard try await fixture.log.delete(Workload.entryKey(fixture.next() - 1), durability: durability) != nil else {
                benchmark.error("the key to delete was missing")
                return
            }
        }
    }

    // MARK: recovery.log.<records>

    // Opening a log of N 256-byte records (files in the page cache): every
    // CRC verified, the index rebuilt. Also reports MB/s and the index's heap
    // bytes per live key.
    let megabytesPerSecond = BenchmarkMetric.custom("MB/s", polarity: .prefersLarger, useScalingFactor: false)
    let indexBytesPerKey = BenchmarkMetric.custom("index B/key", polarity: .prefersSmaller, useScalingFactor: false)
    for (name, records, iterations) in [("10k", 10_000, 30), ("100k", 100_000, 10), ("1M", 1_000_000, 3)] {
        directoryBenchmark(
            "recovery.log.\(name)", prefix: "outbox-bench-recovery",
            configuration: .init(
                metrics: [.wallClock, .cpuTotal, megabytesPerSecond, indexBytesPerKey],
                warmupIterations: 1,
                maxDuration: .seconds(20),
                maxIterations: iterations),
            fill: { try await Workload.makeLog(at: $0.filePath, count: records) }
        ) { benchmark, directory in
            let heapBefore = heapBytesInUse()
            let start = monotonicNanoseconds()
            let log = try await OutboxLog.open(at: directory.filePath)
            let nanoseconds = monotonicNanoseconds() - start
            let heapAfter = heapBytesInUse()
            benchmark.stopMeasurement()
            let report = log.recoveryReport
            guard report.liveKeys == records else {
                benchmark.error("recovered \(report.liveKeys) of \(records) keys")
                return
            }
            benchmark.measurement(megabytesPerSecond, Int(Double(report.bytes) / (Double(nanoseconds) / 1e9) / 1e6))
            if let heapBefore, let heapAfter {
                benchmark.measurement(indexBytesPerKey, (heapAfter - heapBefore) / records)
            }
            try await log.close()
        }
    }

    // MARK: Compaction

    // compaction.throughput: each iteration overwrites every one of 40k keys
    // (not measured), then compacts (measured): half of what it reads is dead.
    let compactionConfiguration: OutboxLog.Configuration = {
        var configuration = OutboxLog.Configuration()
        configuration.automaticCompactionRatio = nil
        configuration.segmentSize = 4 << 20
        return configuration
    }()
    do {
        let box = FixtureBox<LogFixture>()
        let keys = 40_000
        let payload = Workload.jsonPayload(size: 256)
        Benchmark(
            "compaction.throughput",
            configuration: .init(
                metrics: [.wallClock, .cpuTotal, megabytesPerSecond],
                warmupIterations: 1,
                maxDuration: .seconds(10),
                maxIterations: 8,
                setup: {
                    let fixture = try await LogFixture.open(configuration: compactionConfiguration)
                    for index in 0..<keys { try await fixture.log.put(Workload.entryKey(index), payload, durability: .buffered) }
                    box.value = fixture
                },
                teardown: { try await box.value?.close() })
        ) { benchmark in
            let fixture = box.unwrapped
            // Making the garbage comes before `startMeasurement()`: not measured.
            for index in 0..<keys { try await fixture.log.put(Workload.entryKey(index), payload, durability: .buffered) }
            try await fixture.log.sync()
            benchmark.startMeasurement()
            let report = try await fixture.log.compact()
            benchmark.stopMeasurement()
            let seconds = Double(report.duration.components.seconds) + Double(report.duration.components.attoseconds) / 1e18
            if seconds > 0 { benchmark.measurement(megabytesPerSecond, Int(Double(report.bytesBefore) / seconds / 1e6)) }
        }
    }

    // compaction.append.256B.durable: one durable put per iteration while a
    // background task compacts over and over (1 MiB segments, every put
    // overwrites one of 40k keys, so every sealed segment has dead records).
    // Compare its percentiles with append.256B.durable.1p (an idle log).
    do {
        let box = FixtureBox<(LogFixture, Task<Int, Never>, StopFlag)>()
        let keys = 40_000
        let payload = Workload.jsonPayload(size: 256)
        var configuration = compactionConfiguration
        configuration.segmentSize = 1 << 20
        Benchmark(
            "compaction.append.256B.durable",
            configuration: .init(
                warmupIterations: 10,
                maxDuration: .seconds(2),
                maxIterations: 20_000,
                setup: { [configuration] in
                    let fixture = try await LogFixture.open(configuration: configuration)
                    for index in 0..<keys { try await fixture.log.put(Workload.entryKey(index), payload, durability: .buffered) }
                    for index in 0..<keys { try await fixture.log.put(Workload.entryKey(index), payload, durability: .buffered) }
                    try await fixture.log.sync()
                    let stop = StopFlag()
                    let compactor = Task.detached {
                        var runs = 0
                        while !stop.isSet {
                            if let report = try? await fixture.log.compact(), report.inputSegments > 0 {
                                runs += 1
                            } else {
                                try? await Task.sleep(for: .milliseconds(1))
                            }
                        }
                        return runs
                    }
                    box.value = (fixture, compactor, stop)
                },
                teardown: {
                    guard let (fixture, compactor, stop) = box.value else { return }
                    stop.set()
                    let runs = await compactor.value
                    FileHandle.standardError.write(Data("compaction.append.256B.durable: \(runs) compactions ran during the benchmark\n".utf8))
                    try await fixture.close()
                })
        ) { benchmark in
            let fixture = box.unwrapped.0
            try await fixture.log.put(Workload.entryKey(fixture.next() % keys), payload, durability: .durable)
        }
    }
}
