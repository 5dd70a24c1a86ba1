// `outbox-server-bench`: the reference server (`outbox serve`, release
// build) under load, side by side in one run, with wrk on loopback.
//
//   cd Benchmarks
//   swift build -c release --product outbox          # the server, built in this package's .build
//   swift run -c release outbox-server-bench [--quick] [--output ../Docs]
//
// 1. Load: POST /messages with a new Idempotency-Key per request, for no
//    middleware, in-memory keys and durable keys (LogIdempotencyKeyStore), at 1,
//    16 and 64 connections; rounds interleaved, medians reported.
// 2. Stored keys: a durable store with 10k / 100k / 1M completed keys; restart
//    time (spawn to "listening on") and resident memory per stored key.
// 3. Descriptor limit: `ulimit -n 128` and 150 idle clients; how long a new
//    request waits and how much CPU the server burns meanwhile, with the
//    connection limits on and off.
// 4. With --postgres URL (or OUTBOX_POSTGRES_URL): keys in PostgreSQL on 1,
//    2 and 4 server processes beside in-memory keys (PostgresScenario);
//    --postgres-only runs just that and writes server-benchmark-postgres.md.

import Foundation
import IdempotencyKeyMiddleware
import SystemPackage

/// Runs a command and returns its standard output.
enum ServerBench {
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}

struct Options {
    var outbox = URL(fileURLWithPath: ".build/release/outbox").standardizedFileURL.path
    var output = "../Docs"
    var seconds = 5
    var rounds = 3
    var connections = [1, 16, 64]
    var storedKeys = [10_000, 100_000, 1_000_000]
    var restarts = 3
    var postgres = ProcessInfo.processInfo.environment["OUTBOX_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    var postgresOnly = false
    var postgresConnections = [16, 64]

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--outbox": options.outbox = iterator.next() ?? options.outbox
            case "--output": options.output = iterator.next() ?? options.output
            case "--seconds": options.seconds = iterator.next().flatMap(Int.init) ?? options.seconds
            case "--rounds": options.rounds = iterator.next().flatMap(Int.init) ?? options.rounds
            case "--postgres": options.postgres = iterator.next()
            case "--postgres-only": options.postgresOnly = true
            case "--quick":
                options.seconds = 2
                options.rounds = 1
                options.storedKeys = [10_000, 100_000]
                options.restarts = 1
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
                exit(64)
            }
        }
        return options
    }
}

func progress(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }

func temporaryDirectory(_ name: String) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("server-bench-\(name)-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
guard FileManager.default.isExecutableFile(atPath: options.outbox) else {
    progress("no outbox binary at \(options.outbox): run `swift build -c release --product outbox` here first")
    exit(1)
}
guard FileManager.default.isExecutableFile(atPath: "/usr/bin/wrk") else {
    progress("wrk is not installed: apt-get install -y wrk")
    exit(1)
}
if options.postgresOnly && options.postgres == nil {
    progress("--postgres-only needs --postgres URL (or OUTBOX_POSTGRES_URL): start one with Scripts/postgres/start.sh")
    exit(1)
}
// Before minutes of measuring: an output folder that cannot be made is said now.
do {
    try FileManager.default.createDirectory(atPath: options.output, withIntermediateDirectories: true)
} catch {
    progress("cannot create --output \(options.output): \(error)")
    exit(1)
}
let started = Date()
let command = "swift run -c release outbox-server-bench " + CommandLine.arguments.dropFirst().joined(separator: " ")
var report = BenchReport(command: command)
if !options.postgresOnly {
    report.load = try LoadScenario.run(options)
    report.stored = try await StoredKeysScenario.run(options)
    report.descriptors = try DescriptorScenario.run(options)
}
if let url = options.postgres { report.postgres = try PostgresScenario.run(options, url: url) }
report.seconds = Date().timeIntervalSince(started)
if options.postgresOnly {
    try report.writePostgres(to: options.output)
    print(report.postgresMarkdown())
} else {
    try report.write(to: options.output)
    print(report.markdown())
}
