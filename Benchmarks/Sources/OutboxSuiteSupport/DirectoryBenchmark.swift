import Benchmark
import OutboxBenchSupport

/// Declares a benchmark on a temporary directory that its setup creates and
/// `fill`s once (not measured) and its teardown removes: every iteration
/// runs `body` on the same directory (an open of what `fill` wrote, say).
/// `configuration` gives everything but the setup and teardown.
public func directoryBenchmark(
    _ name: String, prefix: String, configuration: Benchmark.Configuration,
    fill: @escaping @Sendable (TemporaryDirectory) async throws -> Void,
    _ body: @escaping @Sendable (Benchmark, TemporaryDirectory) async throws -> Void
) {
    let box = FixtureBox<TemporaryDirectory>()
    var configuration = configuration
    configuration.setup = {
        let directory = try TemporaryDirectory(prefix: prefix)
        try await fill(directory)
        box.value = directory
    }
    configuration.teardown = { box.value?.remove() }
    Benchmark(name, configuration: configuration) { benchmark in try await body(benchmark, box.unwrapped) }
}
