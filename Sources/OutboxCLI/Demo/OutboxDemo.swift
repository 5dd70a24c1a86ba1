import ArgumentParser
import Foundation
import SystemPackage

/// `outbox demo [--count N] [--fault-rate R] [--seed S] [--json]`
struct OutboxDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play a day of an offline-first app against a faulty server, and prove every write arrived once.",
        discussion: """
            Starts the reference Idempotency-Key server on 127.0.0.1 (a free port) with faults \
            injected (503s, 429s, answers held past the client's timeout, connections dropped \
            after the write was applied, slow answers), opens an outbox in a temporary \
            directory, records writes while offline (albums, photos referring to them by \
            local: id, likes toggled until they coalesce, messages — some rejected with 422), \
            comes back online, kills the app mid-drain, restarts it and drains the rest. \
            Prints a ledger; exits 1 if any write was lost or applied twice.
            """
    )

    @Option(help: "About how many writes the user makes (at least 10).")
    var count = 200

    @Option(help: "The share of requests the server disturbs (0 ... 0.9).")
    var faultRate = 0.25

    @Option(help: "Seeds the scenario and the faults.")
    var seed: UInt64 = 2026

    @Flag(help: "Print the ledger as one JSON object (progress goes to standard error).")
    var json = false

    @Option(help: "Keep the demo's files in this directory instead of a temporary one.")
    var directory: String?

    func validate() throws {
        guard count >= 10 else { throw ValidationError("--count must be at least 10") }
        guard (0...0.9).contains(faultRate) else { throw ValidationError("--fault-rate must be between 0 and 0.9") }
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
        let report = try await DemoScenario(
            options: .init(count: count, faultRate: faultRate, seed: seed, directory: FilePath(folder), progress: progress)
        ).run()
        if json {
            StandardStreams.writeLine(try JSONLines().encode(report))
        } else {
            StandardStreams.writeLine(report.text)
        }
        if !report.violations.isEmpty { throw ExitCode(1) }
    }
}
