// swift-tools-version: 6.1
//
// The benchmark suite and the comparison command of swift-outbox, as a nested
// package (like swift-nio's and swift-log's) so that `swift build` and
// `swift test` of the root package never build package-benchmark or GRDB.
//
//   cd Benchmarks
//   swift package benchmark --no-progress                 # the package-benchmark suite
//   swift run -c release outbox-compare [--quick] [--output ../Docs]
//   swift build -c release --product outbox && swift run -c release outbox-server-bench [--quick] [--output ../Docs]
//                                                         # the server under wrk (apt-get install -y wrk)
//   swift run -c release outbox-server-bench --postgres-only --postgres "$(../Scripts/postgres/start.sh)" [--output ../Docs]
//                                                         # keys in PostgreSQL on 1, 2, 4 server processes vs in-memory
//
// GRDB.swift (SQLite) is a dependency of this package only: it is what the
// comparison measures against.

import PackageDescription

/// Products of the root package (swift-outbox) as target dependencies.
func outbox(_ products: String...) -> [Target.Dependency] {
    products.map { .product(name: $0, package: "swift-outbox") }
}

/// A package-benchmark suite: `Benchmarks/<name>/<name>.swift`, run by the
/// benchmark plugin, on the shared support targets and these products of
/// swift-outbox.
func benchmarkSuite(_ name: String, using products: [Target.Dependency]) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["OutboxBenchSupport", "OutboxSuiteSupport", .product(name: "Benchmark", package: "benchmark")]
            + products,
        path: "Benchmarks/\(name)",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
}

let package = Package(
    name: "swift-outbox-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-outbox", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // malloc's in-use byte count (mallinfo2), for index memory per entry.
        .target(name: "CMallocStats", path: "Sources/CMallocStats"),

        // Workloads and measuring helpers shared by the suite and the comparison.
        .target(
            name: "OutboxBenchSupport",
            dependencies: ["CMallocStats"] + outbox("Outbox", "OutboxLog")
        ),

        // `outbox-compare`: the same workload on LogOutboxStore, SQLite (GRDB),
        // a JSON file rewritten on every change, and a raw write+fdatasync
        // loop, side by side in one process; with `--only queue`,
        // DurableQueue against a Tape-style file, a SQLite table and RocksDB
        // (its C library loaded at run time) used as queues; writes
        // Markdown, JSON and SVG.
        .executableTarget(
            name: "outbox-compare",
            dependencies: ["OutboxBenchSupport", .product(name: "GRDB", package: "GRDB.swift")]
                + outbox("Outbox", "OutboxLog", "OutboxQueue")
                // The crash section's flush: HTTP deliveries to the loopback reference server.
                + outbox("OutboxHTTP", "OutboxReferenceServer", "IdempotencyKeyMiddleware"),
            path: "Sources/OutboxCompare"
        ),

        // `outbox-server-bench`: `outbox serve` (release) under wrk — no
        // middleware, in-memory keys and durable keys side by side — plus
        // restart time and memory against stored keys, and the descriptor
        // limit; writes Markdown, JSON and an SVG chart.
        .executableTarget(
            name: "outbox-server-bench",
            dependencies: outbox("IdempotencyKeyMiddleware") + [.product(name: "SystemPackage", package: "swift-system")],
            path: "Sources/ServerBench"
        ),

        // What the package-benchmark suites share: their defaults and the
        // size × durability × producers matrix of write benchmarks.
        .target(
            name: "OutboxSuiteSupport",
            dependencies: ["OutboxBenchSupport", .product(name: "Benchmark", package: "benchmark")] + outbox("OutboxLog")
        ),

        // package-benchmark suites.
        benchmarkSuite("OutboxLogBenchmarks", using: outbox("OutboxLog")),
        benchmarkSuite("OutboxStoreBenchmarks", using: outbox("Outbox", "OutboxLog")),
        benchmarkSuite("OutboxSpoolBenchmarks", using: outbox("Outbox", "OutboxLog")),
    ],
    swiftLanguageModes: [.v6]
)
