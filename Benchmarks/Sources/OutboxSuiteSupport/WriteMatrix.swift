import Benchmark
import OutboxBenchSupport
import OutboxLog

/// The payload sizes the write benchmarks run at, with the names they carry.
public let writeSizes: [(name: String, bytes: Int)] = [("64B", 64), ("256B", 256), ("4KiB", 4096), ("64KiB", 65536)]

/// Declares `<prefix>.<size>.<durability>.<producers>p` for every write size,
/// durability level and producer count (1 and 64), each on a fixture of its
/// own that `open` makes for that durability and `close` ends.
///
/// 1p: one `write` per iteration. 64p: 1000 writes from 64 concurrent
/// producers per iteration, reported per write (scaling factor kilo). The
/// iterations are capped so that a run writes at most ~512 MiB however fast
/// it is.
public func writeMatrix<Fixture: Sendable>(
    _ prefix: String,
    open: @escaping @Sendable (Durability) async throws -> Fixture,
    close: @escaping @Sendable (Fixture) async throws -> Void,
    write: @escaping @Sendable (Fixture, _ payload: [UInt8], Durability) async throws -> Void
) {
    for size in writeSizes {
        for durability in Durability.allCases {
            for producers in [1, 64] {
                let perIteration = producers == 1 ? 1 : 1000
                let byteBudget = 512 << 20
                let iterationLimit = max(3, min(producers == 1 ? 20_000 : 200, byteBudget / (size.bytes * perIteration)))
                let box = FixtureBox<Fixture>()
                let payload = Workload.jsonPayload(size: size.bytes)
                Benchmark(
                    "\(prefix).\(size.name).\(durability).\(producers)p",
                    configuration: .init(
                        warmupIterations: producers == 1 ? 10 : 1,
                        scalingFactor: producers == 1 ? .one : .kilo,
                        maxDuration: .seconds(producers == 1 ? 1 : 2),
                        maxIterations: iterationLimit,
                        setup: { box.value = try await open(durability) },
                        teardown: {
                            if let fixture = box.value { try await close(fixture) }
                        })
                ) { _ in
                    let fixture = box.unwrapped
                    if producers == 1 {
                        try await write(fixture, payload, durability)
                    } else {
                        try await concurrently(total: perIteration, producers: producers) {
                            try await write(fixture, payload, durability)
                        }
                    }
                }
            }
        }
    }
}
