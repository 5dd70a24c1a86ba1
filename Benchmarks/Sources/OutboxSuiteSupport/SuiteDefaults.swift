import Benchmark

/// The defaults every package-benchmark suite of this package starts from:
/// wall clock, throughput and malloc counts, 5 warm-up iterations, and the
/// suite's own limits on time and iterations per benchmark.
public func useSuiteDefaults(maxDuration: Duration = .seconds(1), maxIterations: Int = 10_000) {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        warmupIterations: 5,
        maxDuration: maxDuration,
        maxIterations: maxIterations
    )
}
