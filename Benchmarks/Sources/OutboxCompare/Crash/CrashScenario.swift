import Foundation
import IdempotencyKeyMiddleware
import Outbox
import OutboxBenchSupport
import OutboxReferenceServer

/// p50 / p95 / max of restart latencies, in milliseconds, over the lives
/// that got that far; `missing` lives were killed before.
struct LatencySummary: Codable, Sendable {
    var p50: Double?
    var p95: Double?
    var max: Double?
    var count: Int
    var missing: Int

    init(_ nanoseconds: [UInt64?]) {
        let values = nanoseconds.compactMap { $0 }.sorted()
        count = values.count
        missing = nanoseconds.count - values.count
        func at(_ p: Double) -> Double? {
            guard !values.isEmpty else { return nil }
            return Double(values[min(values.count - 1, Int((p * Double(values.count - 1)).rounded()))]) / 1e6
        }
        p50 = at(0.5)
        p95 = at(0.95)
        max = values.last.map { Double($0) / 1e6 }
    }
}

/// One contender under one crash workload.
struct CrashResult: Codable, Sendable {
    var workload: String
    var contender: String
    var isOurs: Bool
    var wallSeconds: Double
    var lives: Int
    var acknowledged: Int
    var delivered: Int
    var acknowledgedPerSecond: Double
    var deliveredPerSecond: Double
    var restartToOpen: LatencySummary
    var restartToAcknowledged: LatencySummary
    var restartToDelivered: LatencySummary?
    /// Requests the server saw again for a key it had seen (answered from
    /// the key, or 409 while the first was running).
    var resent: Int?
    /// Entries pending when the run started (the restart section's backlog).
    var backlog: Int
    /// What the check found wrong: must be empty.
    var violations: [String]
}

struct CrashSettings: Codable, Sendable {
    var seconds: Double
    var seed: UInt64
    var killAfter: ClosedRange<Double>
    var backlogs: [Int]
    var restarts: Int
    /// Entries pending when the flush workload starts.
    var flushBacklog: Int
    /// Which workloads run: enqueue, flush, restart.
    var workloads: Set<String>
    /// How far ahead our killed workers zero-fill their active segment
    /// (`OutboxLog.Configuration.preallocation`); 0: not at all. Optional
    /// so that reports written before it existed still decode.
    var preallocation: Int? = 0

    /// Hands ``preallocation`` to the worker processes.
    static let preallocationVariable = "OUTBOX_COMPARE_CRASH_PREALLOCATION"
}

enum CrashContender: String, CaseIterable, Sendable {
    case ours, sqlite
    var name: String { self == .ours ? "ours (LogOutboxStore, durable)" : "SQLite FULL (GRDB, WAL)" }
}

/// The crash section: workers killed with SIGKILL and restarted at once.
struct CrashScenario {
    let settings: CrashSettings
    var generator: SeededGenerator

    init(settings: CrashSettings) {
        self.settings = settings
        generator = SeededGenerator(seed: settings.seed)
    }

    /// Enqueue with `producers` producers, killed at seeded random moments,
    /// for the configured wall time; then every acknowledged entry must be
    /// in the store.
    mutating func enqueue(_ contender: CrashContender, producers: Int) async throws -> CrashResult {
        let directory = try TemporaryDirectory(prefix: "outbox-compare-crash")
        defer { directory.remove() }
        let workload = "enqueue.\(producers)p"
        progress("  \(workload) \(contender.rawValue): \(settings.seconds) s of kills")
        let (lives, box, wall) = try await killLoop(["enqueue", contender.rawValue, directory.path, "\(producers)"])
        let ledger = box.snapshot
        let violations = try await missingAcknowledged(ledger, contender: contender, directory: directory)
        return result(workload, contender, lives: lives, ledger: ledger, wall: wall, resent: nil, backlog: 0, violations: violations)
    }

    /// One producer enqueueing and a drainer delivering to the reference
    /// server in the same killed process; then an unkilled run delivers what
    /// is left, and every acknowledged entry's key must have been applied
    /// exactly once (and no key twice).
    mutating func flush(_ contender: CrashContender) async throws -> CrashResult {
        let directory = try TemporaryDirectory(prefix: "outbox-compare-crash-flush")
        defer { directory.remove() }
        // A backlog to drain, so the drainer and not the producer sets the pace.
        try await fill(contender, directory: directory, count: settings.flushBacklog)
        let server = try await ReferenceServer.start(keyStore: InMemoryIdempotencyKeyStore())
        let url = server.baseURL.absoluteString
        progress(
            "  flush \(contender.rawValue) from \(settings.flushBacklog) pending: \(settings.seconds) s of kills, then an unkilled drain of what is left")
        let (lives, box, wall) = try await killLoop(["flush", contender.rawValue, directory.path, url])
        let deliveredInWindow = box.update { $0.delivered.count }
        let arguments = ["crash-worker", "finish", contender.rawValue, directory.path, url]
        _ = try await onDedicatedThread { try runWorkerLife(arguments: arguments, kill: .never(timeout: 900), into: box) }
        let ledger = box.snapshot
        let served = server.ledger
        await server.stop()
        // (An acknowledged entry may lack a `D` line: the kill can fall
        // between its recorded success and the report. The server's ledger
        // is the judge, and the final run left nothing unsent.)
        let violations = exactlyOnce(ledger, served)
        var outcome = result(
            "flush", contender, lives: lives, ledger: ledger, wall: wall, resent: served.replays + served.inProgress,
            backlog: settings.flushBacklog, violations: violations)
        outcome.delivered = deliveredInWindow
        outcome.deliveredPerSecond = Double(deliveredInWindow) / wall
        return outcome
    }

    /// Restart latency at a backlog: `backlog` entries pending (written by
    /// this process, closed cleanly), then `restarts` lives of the flush
    /// worker, each killed 0–0.2 s after its first acknowledged enqueue and
    /// its first delivery. Checked: every acknowledged entry is delivered or
    /// still stored, and no key was applied twice.
    mutating func restart(_ contender: CrashContender, backlog: Int) async throws -> CrashResult {
        let directory = try TemporaryDirectory(prefix: "outbox-compare-crash-backlog")
        defer { directory.remove() }
        let filling = monotonicNanoseconds()
        try await fill(contender, directory: directory, count: backlog)
        progress(
            "  restart at \(backlog) pending, \(contender.rawValue): filled in \(String(format: "%.1f", Double(monotonicNanoseconds() - filling) / 1e9)) s; \(settings.restarts) restarts"
        )
        let server = try await ReferenceServer.start(keyStore: InMemoryIdempotencyKeyStore())
        var lives: [WorkerLife] = []
        let box = CrashLedgerBox()
        let start = monotonicNanoseconds()
        for _ in 0..<settings.restarts {
            let delay = Double.random(in: 0...0.2, using: &generator)
            let arguments = ["crash-worker", "flush", contender.rawValue, directory.path, server.baseURL.absoluteString]
            lives.append(
                try await onDedicatedThread {
                    try runWorkerLife(
                        arguments: arguments, kill: .afterFirst(delay: delay, waitForDelivery: true, timeout: 120), into: box)
                })
        }
        let wall = Double(monotonicNanoseconds() - start) / 1e9
        let ledger = box.snapshot
        let served = server.ledger
        await server.stop()
        var violations = served.appliedTwice.prefix(5).map { "key \($0) applied \(served.applied[$0] ?? 0) times" }
        var undelivered = ledger
        undelivered.acknowledged = ledger.acknowledged.filter { !ledger.delivered.contains($0.key) }
        violations += try await missingAcknowledged(undelivered, contender: contender, directory: directory)
        return result(
            "restart.\(backlog)", contender, lives: lives, ledger: ledger, wall: wall,
            resent: served.replays + served.inProgress, backlog: backlog, violations: violations)
    }

    // MARK: Kill loop and checks

    /// `count` pending entries, written by this process and closed cleanly
    /// (the server never saw them: their keys are not in its ledger).
    private func fill(_ contender: CrashContender, directory: TemporaryDirectory, count: Int) async throws {
        guard count > 0 else { return }
        switch contender {
        case .ours: try await Workload.preloadStore(root: directory.filePath, count: count)
        case .sqlite:
            let database = try SQLiteOutbox(path: directory.appending("outbox.sqlite"), synchronous: .full)
            try database.preload(count: count, payload: String(decoding: CrashWorker.payload, as: UTF8.self))
            try database.close()
        }
    }

    /// Lives of the worker, each killed at a seeded random moment in
    /// `settings.killAfter` seconds and restarted at once, until the wall
    /// time is up.
    private mutating func killLoop(_ worker: [String]) async throws -> ([WorkerLife], CrashLedgerBox, Double) {
        let start = monotonicNanoseconds()
        let end = start + UInt64(settings.seconds * 1e9)
        var lives: [WorkerLife] = []
        let box = CrashLedgerBox()
        while monotonicNanoseconds() < end {
            let left = Double(end - min(end, monotonicNanoseconds())) / 1e9
            let delay = min(Double.random(in: settings.killAfter, using: &generator), left)
            lives.append(
                try await onDedicatedThread { try runWorkerLife(arguments: ["crash-worker"] + worker, kill: .at(delay), into: box) })
        }
        return (lives, box, Double(monotonicNanoseconds() - start) / 1e9)
    }

    /// Acknowledged entries the store no longer has.
    private func missingAcknowledged(
        _ ledger: CrashLedger, contender: CrashContender, directory: TemporaryDirectory
    ) async throws -> [String] {
        var missing: [String] = []
        switch contender {
        case .ours:
            // Everything the store has, read back through its public API.
            let store = try await LogOutboxStore.open(root: directory.filePath, partition: Workload.partition)
            let present = Set(try await store.entries(matching: .all).map(\.id.description))
            try await store.close()
            missing = ledger.acknowledged.keys.filter { !present.contains($0) }
        case .sqlite:
            let database = try SQLiteOutbox(path: directory.appending("outbox.sqlite"), synchronous: .full)
            let present = try database.allIDs()
            try database.close()
            missing = ledger.acknowledged.keys.filter { !present.contains($0) }
        }
        guard !missing.isEmpty else { return [] }
        return ["\(missing.count) acknowledged entries lost, e.g. \(missing.prefix(3).joined(separator: ", "))"]
    }

    /// Every acknowledged entry's key applied exactly once; no key twice.
    private func exactlyOnce(_ ledger: CrashLedger, _ served: ReferenceLedger) -> [String] {
        var violations: [String] = []
        let notApplied = ledger.acknowledged.values.filter { served.applied[$0] == nil }
        if !notApplied.isEmpty {
            violations.append("\(notApplied.count) acknowledged keys never applied, e.g. \(notApplied.prefix(3).joined(separator: ", "))")
        }
        let twice = served.appliedTwice
        if !twice.isEmpty { violations.append("\(twice.count) keys applied more than once, e.g. \(twice.prefix(3).joined(separator: ", "))") }
        if served.appliedWithoutKey > 0 { violations.append("\(served.appliedWithoutKey) writes applied without a key") }
        if served.keyMismatches > 0 { violations.append("\(served.keyMismatches) keys reused with a different request") }
        if ledger.deliveredTwice > 0 { violations.append("\(ledger.deliveredTwice) deliveries confirmed twice") }
        return violations
    }

    private func result(
        _ workload: String, _ contender: CrashContender, lives: [WorkerLife], ledger: CrashLedger, wall: Double,
        resent: Int?, backlog: Int, violations: [String]
    ) -> CrashResult {
        let delivers = !workload.hasPrefix("enqueue.")
        return CrashResult(
            workload: workload, contender: contender.name, isOurs: contender == .ours, wallSeconds: wall, lives: lives.count,
            acknowledged: ledger.acknowledged.count, delivered: ledger.delivered.count,
            acknowledgedPerSecond: Double(ledger.acknowledged.count) / wall,
            deliveredPerSecond: Double(ledger.delivered.count) / wall,
            restartToOpen: LatencySummary(lives.map(\.opened)),
            restartToAcknowledged: LatencySummary(lives.map(\.firstAcknowledged)),
            restartToDelivered: delivers ? LatencySummary(lives.map(\.firstDelivered)) : nil,
            resent: resent, backlog: backlog, violations: violations)
    }
}

/// Runs the whole crash section.
func runCrash(settings: CrashSettings) async throws -> [CrashResult] {
    progress("▸ crash: SIGKILL at seeded random moments \(settings.killAfter) s (seed \(settings.seed)), restarted at once")
    var scenario = CrashScenario(settings: settings)
    var results: [CrashResult] = []
    func note(_ result: CrashResult) {
        progress(
            "    \(result.contender): \(Int(result.acknowledgedPerSecond)) ack/s, \(Int(result.deliveredPerSecond)) delivered/s, "
                + "\(result.lives) lives, restart→ack p50 \(format(result.restartToAcknowledged.p50)) ms"
                + (result.violations.isEmpty ? "" : " — VIOLATIONS: \(result.violations)"))
        results.append(result)
    }
    for producers in [1, 64] where settings.workloads.contains("enqueue") {
        for contender in CrashContender.allCases { note(try await scenario.enqueue(contender, producers: producers)) }
    }
    if settings.workloads.contains("flush") {
        for contender in CrashContender.allCases { note(try await scenario.flush(contender)) }
    }
    for backlog in settings.backlogs where settings.workloads.contains("restart") {
        for contender in CrashContender.allCases { note(try await scenario.restart(contender, backlog: backlog)) }
    }
    return results
}

private func format(_ value: Double?) -> String { value.map { String(format: "%.0f", $0) } ?? "–" }
