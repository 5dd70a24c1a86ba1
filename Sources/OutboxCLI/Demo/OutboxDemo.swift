import ArgumentParser
import Foundation
import SystemPackage

/// `outbox demo [--count N] [--fault-rate R] [--seed S] [--deadline SECONDS] [--servers N --postgres URL] [--json]`
struct OutboxDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play a day of an offline-first app against a faulty server, and prove every write arrived once.",
        discussion: """
            Starts the reference Idempotency-Key server on 127.0.0.1 (a free port) with faults \
            injected (503s, 429s, answers held past the client's timeout, connections dropped \
            after the write was applied, slow answers, and connection-level faults: closed \
            before any response, reset after apply, half-open, idle keep-alive connections \
            closed by the server, 303 redirects after apply), opens an outbox in a temporary \
            directory, records writes while offline (albums, photos referring to them by \
            local: id, likes toggled until they coalesce, messages — some rejected with 422), \
            comes back online, kills the app mid-drain, restarts it and drains the rest. \
            Prints a ledger; exits 1 if any write was lost or applied twice, or if the demo \
            could not finish (a store or dispatcher error, or the deadline passed): then the \
            ledger says what remained and one `error:` line says why. With --postgres URL \
            (and --servers N), the servers are N `outbox serve --postgres` processes on that \
            database, which the app reaches round-robin, so retries land on other servers: \
            the ledger counts every apply across them.
            """
    )

    @Option(help: "About how many writes the user makes (10...\(maximumCount)).")
    var count = 200

    @Option(help: "The share of requests the server disturbs (0 ... 0.9).")
    var faultRate = 0.25

    @Option(help: "Seeds the scenario and the faults.")
    var seed: UInt64 = 2026

    @Option(
        help: "Give up after this long (up to 24h; plain numbers are seconds; default: 60 s + 0.5 s per write, scaled up with the fault rate).",
        transform: DurationArgument.parse)
    var deadline: Duration?

    @Option(help: "Serve from this many `outbox serve --postgres` processes on one database, reached round-robin (needs --postgres).")
    var servers = 1

    @Option(
        name: .customLong("postgres"),
        help: ArgumentHelp("Run the servers as processes on this PostgreSQL database (keys and writes shared).", valueName: "url"))
    var postgres: String?

    @Option(help: "How long the server takes to answer each request, a network's round trip (default 0; e.g. 50ms).", transform: DurationArgument.parse)
    var latency: Duration = .zero

    @Flag(help: "Print the ledger as one JSON object (progress goes to standard error).")
    var json = false

    @Option(help: "Keep the demo's files in this directory instead of a temporary one.")
    var directory: String?

    /// For testing the deadline: the server answers every write 503.
    @Flag(name: .customLong("debug-reject-everything"), help: .hidden)
    var rejectEverything = false

    /// For testing the error path: the app's disk fails after the restart.
    @Flag(name: .customLong("debug-fail-disk-after-restart"), help: .hidden)
    var failDiskAfterRestart = false

    /// The most writes `--count` asks for.
    static let maximumCount = 100_000

    /// The longest `--deadline`.
    static let maximumDeadline: Duration = .seconds(86_400)

    /// How long the day may take: `--deadline`, or 60 s plus, per write,
    /// half a second and twice its share of the round trips (`--latency`
    /// over the deliveries run at once), divided by the share of requests
    /// that get through (at most about 6 days with the largest --count and
    /// --fault-rate and no latency).
    var deadlineDuration: Duration {
        deadline ?? .seconds((60 + (0.5 + 2 * DemoReport.milliseconds(latency) / 1000 / Double(DemoScenario.concurrency))
            * Double(count) / (1 - faultRate)).rounded(.up))
    }

    /// After the deadline, this much more before the process is ended
    /// outright (for an await that never returns).
    static let hangGrace: Duration = .seconds(30)

    func validate() throws {
        try OptionRange.require(count, in: 10...Self.maximumCount, "--count")
        try OptionRange.require(faultRate, in: 0...0.9, "--fault-rate")
        try OptionRange.require(servers, in: 1...16, "--servers")
        if servers > 1 && postgres == nil { throw ValidationError("--servers needs --postgres URL: servers share keys through the database") }
        if let postgres {
            _ = try PostgresOptions.clientConfiguration(url: postgres)
            if rejectEverything { throw ValidationError("--debug-reject-everything runs an in-process server: not with --postgres") }
        }
        if let deadline { try OptionRange.require(deadline, "--deadline", positive: true, maximum: Self.maximumDeadline) }
        try OptionRange.require(latency, "--latency", positive: false, maximum: .seconds(60))
    }

    func run() async throws {
        let folder = directory ?? (FileManager.default.temporaryDirectory.path + "/outbox-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { if directory == nil { try? FileManager.default.removeItem(atPath: folder) } }
        let json = self.json
        let started = Date()
        let progress: (String) -> Void = { line in
            let stamp = String(format: "[%5.1fs] ", Date().timeIntervalSince(started))
            if json { StandardStreams.writeError(stamp + line) } else { StandardStreams.writeLine(stamp + line) }
        }
        let deadline = deadlineDuration
        // The scenario checks the deadline while it waits; this is the last
        // resort if something it awaits never returns.
        let watchdog = Task { [seconds = deadline.components.seconds] in
            try await Task.sleep(for: deadline + Self.hangGrace)
            StandardStreams.writeError("error: demo did not finish: still running 30 s after its deadline of \(seconds) s")
            Foundation.exit(1)
        }
        defer { watchdog.cancel() }
        let report = try await DemoScenario(
            options: .init(
                count: count, faultRate: faultRate, seed: seed, directory: FilePath(folder), deadline: deadline,
                rejectEverything: rejectEverything, failDiskAfterRestart: failDiskAfterRestart,
                postgres: postgres.map { ($0, servers) }, latency: latency, progress: progress)
        ).run()
        try StandardStreams.writeReport(json: json, report, text: report.text)
        if let failure = report.failure { throw CommandFailure("demo did not finish: \(failure)", exitCode: ExitCode(1)) }
        if !report.violations.isEmpty { throw ExitCode(1) }
    }
}
