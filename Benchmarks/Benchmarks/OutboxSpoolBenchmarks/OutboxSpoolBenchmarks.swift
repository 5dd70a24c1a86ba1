// Enqueue from another process: one 256-byte durable enqueue
// through `LogOutboxStore.enqueue(_:root:partition:configuration:)`,
// directly (no process holds the queue: open, enqueue, close) and spooled
// (a holder has it open: a new spool, written, synced, closed, poked),
// against an enqueue on a queue this process holds open; and the trip of a
// spooled entry into the holder's queue (spool, then `ingestSpools`).
//
//   cd Benchmarks && swift package benchmark --no-progress --target OutboxSpoolBenchmarks

import Benchmark
import Foundation
import Outbox
import OutboxBenchSupport
import OutboxLog
import OutboxSuiteSupport

let benchmarks: @Sendable () -> Void = {
    useSuiteDefaults(maxDuration: .seconds(2), maxIterations: 2_000)
    let payload = Workload.jsonPayload(size: 256)
    let configuration = Workload.storeConfiguration(enqueue: .durable)

    // The holder: the queue open in this "process" (the benchmark); the
    // calls below meet its lock exactly as another process would.
    func holding(_ name: String, _ body: @escaping @Sendable (StoreFixture) async throws -> Void) {
        let box = FixtureBox<StoreFixture>()
        Benchmark(
            name,
            configuration: .init(
                setup: { box.value = try await StoreFixture.open(configuration: configuration) },
                teardown: { try await box.value?.close() })
        ) { _ in try await body(box.unwrapped) }
    }

    holding("shared.256B.inProcess") { fixture in
        _ = try await fixture.store.enqueue(Workload.request(payload: payload))
    }
    holding("shared.256B.spooled") { fixture in
        let result = try await LogOutboxStore.enqueue(
            [Workload.request(payload: payload)], root: fixture.directory.filePath, partition: Workload.partition,
            configuration: configuration)
        precondition(result.path == .spooled)
    }
    holding("shared.256B.spooledThenIngested") { fixture in
        _ = try await LogOutboxStore.enqueue(
            [Workload.request(payload: payload)], root: fixture.directory.filePath, partition: Workload.partition,
            configuration: configuration)
        let report = try await fixture.store.ingestSpools()
        precondition(report.ingested == 1)
    }

    let directory = FixtureBox<TemporaryDirectory>()
    Benchmark(
        "shared.256B.direct",
        configuration: .init(setup: { directory.value = try TemporaryDirectory(prefix: "outbox-bench-shared") })
    ) { _ in
        let result = try await LogOutboxStore.enqueue(
            [Workload.request(payload: payload)], root: directory.unwrapped.filePath, partition: Workload.partition,
            configuration: configuration)
        precondition(result.path == .direct)
    }
}
