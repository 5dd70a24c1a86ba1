// The outbox (LogOutboxStore and OutboxDispatcher): enqueue at every
// durability level, payload size and producer count; status updates;
// acknowledgements; drain; store recovery and memory per pending entry;
// enqueue cost against queue depth.
//
//   cd Benchmarks && swift package benchmark --no-progress --target OutboxStoreBenchmarks

import Benchmark
import Foundation
import Outbox
import OutboxBenchSupport
import OutboxLog
import OutboxSuiteSupport

let benchmarks: @Sendable () -> Void = {
    useSuiteDefaults()

    // MARK: enqueue.<size>.<durability>.<producers>

    // The store configured with `enqueueDurability = durability`.
    writeMatrix(
        "enqueue",
        open: { durability in
            try await StoreFixture.open(configuration: Workload.storeConfiguration(enqueue: durability))
        },
        close: { try await $0.close() },
        write: { fixture, payload, _ in _ = try await fixture.store.enqueue(Workload.request(payload: payload)) })

    // MARK: Status updates

    // Each iteration takes the next of the entries the setup enqueued.
    let statusEntries = 12_000
    func storeBenchmark(
        _ name: String, maxIterations: Int = 10_000,
        configuration: OutboxStoreConfiguration = OutboxStoreConfiguration(),
        _ body: @escaping @Sendable (Benchmark, StoreFixture, OutboxEntry.ID) async throws -> Void
    ) {
        let box = FixtureBox<StoreFixture>()
        Benchmark(
            name,
            configuration: .init(
                maxIterations: maxIterations,
                setup: { box.value = try await StoreFixture.open(configuration: configuration, prepared: statusEntries) },
                teardown: { try await box.value?.close() })
        ) { benchmark in
            let fixture = box.unwrapped
            try await body(benchmark, fixture, fixture.takePrepared())
        }
    }

    // pending → inFlight, `written` (the default attempt durability).
    storeBenchmark("status.beginAttempt.written") { _, fixture, id in
        _ = try await fixture.store.beginAttempt(id, at: Date(), lease: Workload.lease)
    }
    // inFlight → waitingToRetry with a retry time, `durable` (the default outcome durability).
    // (The attempt starts before `startMeasurement()`: only the failure is measured.)
    storeBenchmark("status.recordFailure.durable") { benchmark, fixture, id in
        _ = try await fixture.store.beginAttempt(id, at: Date(), lease: Workload.lease)
        benchmark.startMeasurement()
        _ = try await fixture.store.recordFailure(
            id, OutboxFailure(.transient, httpStatus: 503, message: "HTTP 503"), retryAt: Date().addingTimeInterval(60))
    }

    // MARK: Acknowledge / delete

    // inFlight → succeeded: tombstone + completion in one batch, at the
    // success durability in the name (`written` is the store's default).
    for durability in [Durability.written, .durable] {
        let configuration = Workload.storeConfiguration(enqueue: .durable, outcome: durability)
        storeBenchmark("ack.recordSuccess.\(durability)", configuration: configuration) { benchmark, fixture, id in
            _ = try await fixture.store.beginAttempt(id, at: Date(), lease: Workload.lease)
            benchmark.startMeasurement()
            try await fixture.store.recordSuccess(id, serverID: "srv-1", at: Date())
        }
        // What the dispatcher does per delivered entry: start the attempt
        // (written) and record the success.
        storeBenchmark("ack.beginAttemptThenSuccess.\(durability)", configuration: configuration) { _, fixture, id in
            try await Workload.acknowledge(id, in: fixture.store, serverID: "srv-1")
        }
    }
    // A pending entry removed (durable tombstone).
    storeBenchmark("ack.discard.durable") { _, fixture, id in
        _ = try await fixture.store.discard(id)
    }

    // MARK: drain.<concurrency>.<entries>

    // OutboxDispatcher over LogOutboxStore with a handler that succeeds at
    // once; durable acknowledgements. Each iteration drains a fresh store
    // (preloading is not measured). Reports entries/s.
    let entriesPerSecond = BenchmarkMetric.custom("entries/s", polarity: .prefersLarger, useScalingFactor: false)
    for (concurrency, entries) in [(4, 10_000), (64, 2_000)] {
        Benchmark(
            "drain.c\(concurrency).\(entries / 1000)k",
            configuration: .init(
                metrics: [.wallClock, .cpuTotal, entriesPerSecond],
                warmupIterations: 1,
                maxDuration: .seconds(20),
                maxIterations: 3)
        ) { benchmark in
            // Preloading comes before `startMeasurement()`: not measured.
            let fixture = try await StoreFixture.open(depth: entries)
            var configuration = OutboxDispatcherConfiguration()
            configuration.maximumConcurrentDeliveries = concurrency
            configuration.maximumAge = nil
            let dispatcher = OutboxDispatcher(
                store: fixture.store, handlers: ["send_message": ClosureOutboxHandler { _ in .delivered(serverID: nil) }],
                configuration: configuration)
            let start = monotonicNanoseconds()
            benchmark.startMeasurement()
            let report = await dispatcher.flush()
            benchmark.stopMeasurement()
            let seconds = Double(monotonicNanoseconds() - start) / 1e9
            await dispatcher.stop()
            try await fixture.close()
            guard report.delivered == entries else {
                benchmark.error("delivered \(report.delivered) of \(entries): \(report.errors.prefix(3))")
                return
            }
            benchmark.measurement(entriesPerSecond, Int(Double(entries) / seconds))
        }
    }

    // MARK: recovery.store.<entries> and memory per pending entry

    // LogOutboxStore.open on a queue of N pending 256-byte entries closed
    // cleanly, until it is fully loaded (`summary()` waits for the load a
    // checkpointed open leaves to the background): the log's recovery and
    // index, and the scheduler. Files in the page cache. Also reports the
    // heap bytes the loaded store holds per pending entry (log index +
    // scheduler; payloads stay on disk).
    let heapBytesPerEntry = BenchmarkMetric.custom("heap B/entry", polarity: .prefersSmaller, useScalingFactor: false)
    for (name, entries, iterations) in [("10k", 10_000, 20), ("100k", 100_000, 5), ("1M", 1_000_000, 2)] {
        directoryBenchmark(
            "recovery.store.\(name)", prefix: "outbox-bench-store-recovery",
            configuration: .init(
                metrics: [.wallClock, .cpuTotal, heapBytesPerEntry],
                warmupIterations: 1,
                maxDuration: .seconds(30),
                maxIterations: iterations),
            fill: { try await Workload.preloadStore(root: $0.filePath, count: entries) }
        ) { benchmark, directory in
            let heapBefore = heapBytesInUse()
            let store = try await LogOutboxStore.open(root: directory.filePath, partition: Workload.partition)
            let unsent = try await store.summary().unsent
            benchmark.stopMeasurement()
            let heapAfter = heapBytesInUse()
            guard unsent == entries else {
                benchmark.error("reopened with \(unsent) of \(entries) entries")
                return
            }
            if let heapBefore, let heapAfter { benchmark.measurement(heapBytesPerEntry, (heapAfter - heapBefore) / entries) }
            try await store.close()
        }
    }

    // MARK: recovery.afterKill.<entries>

    // Benchmarks on a queue whose last session was killed (no close: no
    // close marker; see KilledStoreImage), N pending 256-byte entries, files
    // in the page cache. Every iteration gets its own copy of the image
    // (copied before the measurement starts; the store is its "root"), and
    // the number of entries it holds.
    func afterKill(
        _ name: String, _ body: @escaping @Sendable (Benchmark, _ copy: TemporaryDirectory, _ entries: Int) async throws -> Void
    ) {
        for (size, entries, iterations) in [("10k", 10_000, 10), ("100k", 100_000, 5), ("1M", 1_000_000, 3)] {
            let box = FixtureBox<KilledStoreImage>()
            Benchmark(
                "\(name).\(size)",
                configuration: .init(
                    metrics: [.wallClock, .cpuTotal],
                    warmupIterations: 1,
                    maxDuration: .seconds(60),
                    maxIterations: iterations,
                    setup: { box.value = try await KilledStoreImage.make(entries: entries) },
                    teardown: { box.value?.image.remove() })
            ) { benchmark in
                let copy = try box.unwrapped.freshCopy()
                defer { copy.remove() }
                try await body(benchmark, copy, entries)
            }
        }
    }

    // LogOutboxStore.open of the killed queue: what an app pays on its
    // first launch after being killed with a backlog.
    afterKill("recovery.afterKill") { benchmark, copy, entries in
        benchmark.startMeasurement()
        let store = try await LogOutboxStore.open(root: copy.filePath.appending("root"), partition: Workload.partition)
        let unsent = try await store.summary().unsent
        benchmark.stopMeasurement()
        try await store.close()
        guard unsent == entries else {
            benchmark.error("reopened after the kill with \(unsent) of \(entries) entries")
            return
        }
    }

    // MARK: recovery.afterKill.firstEnqueue.<entries>

    // The same killed image: open, then one durable enqueue of a freshly
    // minted id — what a relaunched app waits for before its first write is
    // safe (the load of the queue goes on in the background).
    afterKill("recovery.afterKill.firstEnqueue") { benchmark, copy, entries in
        let payload = Workload.jsonPayload(size: 256)
        benchmark.startMeasurement()
        let store = try await LogOutboxStore.open(root: copy.filePath.appending("root"), partition: Workload.partition)
        let result = try await store.enqueue(Workload.request(payload: payload))
        benchmark.stopMeasurement()
        let unsent = try await store.summary().unsent
        try await store.close()
        guard case .enqueued = result, unsent == entries + 1 else {
            benchmark.error("first enqueue after the kill: \(result), \(unsent) of \(entries + 1) entries")
            return
        }
    }

    // memory.store.100k: heap and resident bytes per pending entry, loading
    // 100k entries into a LogOutboxStore (one open in a fresh process). The
    // resident figure includes what the open used transiently and malloc kept.
    let residentBytesPerEntry = BenchmarkMetric.custom("RSS B/entry", polarity: .prefersSmaller, useScalingFactor: false)
    do {
        let entries = 100_000
        directoryBenchmark(
            "memory.store.100k", prefix: "outbox-bench-store-memory",
            configuration: .init(
                metrics: [heapBytesPerEntry, residentBytesPerEntry, .peakMemoryResident],
                warmupIterations: 0,
                maxDuration: .seconds(30),
                // One open: a second one reuses pages the first left resident.
                maxIterations: 1),
            fill: { try await Workload.preloadStore(root: $0.filePath, count: entries) }
        ) { benchmark, directory in
            let heapBefore = heapBytesInUse()
            let residentBefore = residentBytes()
            let store = try await LogOutboxStore.open(root: directory.filePath, partition: Workload.partition)
            _ = try await store.summary()  // the load done
            let heapAfter = heapBytesInUse()
            let residentAfter = residentBytes()
            if let heapBefore, let heapAfter { benchmark.measurement(heapBytesPerEntry, (heapAfter - heapBefore) / entries) }
            if let residentBefore, let residentAfter {
                benchmark.measurement(residentBytesPerEntry, max(0, residentAfter - residentBefore) / entries)
            }
            try await store.close()
        }
    }

    // MARK: depth.enqueue.<durability>.<pending>

    // One enqueue per iteration into a queue that already holds N pending
    // entries: durable (what an app waits for) and buffered (the CPU cost).
    for (name, depth) in [("1k", 1_000), ("10k", 10_000), ("100k", 100_000), ("1M", 1_000_000)] {
        for durability in [Durability.durable, .buffered] {
            let box = FixtureBox<StoreFixture>()
            let payload = Workload.jsonPayload(size: 256)
            Benchmark(
                "depth.enqueue.\(durability).\(name)",
                configuration: .init(
                    warmupIterations: 20,
                    maxDuration: .seconds(1),
                    maxIterations: durability == .durable ? 2_000 : 20_000,
                    setup: {
                        box.value = try await StoreFixture.open(
                            configuration: Workload.storeConfiguration(enqueue: durability), depth: depth)
                    },
                    teardown: { try await box.value?.close() })
            ) { _ in
                _ = try await box.unwrapped.store.enqueue(Workload.request(payload: payload))
            }
        }
    }
}
