// outbox-compare: the same outbox workload on LogOutboxStore, SQLite (GRDB,
// WAL), a JSON file rewritten on every change, and a raw write+fdatasync
// loop, side by side in one process. Prints a table and, with --output,
// writes benchmark-results.md/.json and two SVG charts. `--only crash` runs
// the crash section instead (Crash/): workers killed with SIGKILL and
// restarted, the same binary run as `outbox-compare crash-worker …`.
//
//   cd Benchmarks && swift run -c release outbox-compare [--quick] [--output ../Docs] [--only SECTIONS]

import Foundation
import GRDB
import Outbox
import OutboxBenchSupport
import OutboxLog

// The crash section runs this binary again as the process it kills.
await CrashWorker.runIfAsked(CommandLine.arguments)

struct Options {
    var quick = false
    var output: String?
    var sections: Set<String> = ["compare", "drain", "recovery", "depth", "producers"]
    /// For profiling: only these comparisons (ids), and only our store.
    var scenarios: Set<String>?
    var oursOnly = false
    /// For profiling: only these drainers (c4, c64, c4d, c64d, sqlite).
    var drainers: Set<String>?
    /// The crash section (not in the default set: `--only crash`).
    var crashSeconds: Double?
    var crashBacklogs: [Int]?
    var crashRestarts: Int?
    var crashSeed: UInt64 = 23
    var crashBefore: String?
    var crashFlushBacklog: Int?
    var crashWorkloads: Set<String> = ["enqueue", "flush", "restart"]
    var crashPreallocation = 0

    static let usage = """
        usage: outbox-compare [--quick] [--output DIRECTORY] [--only SECTION,...]

          --quick          a smoke test: fewer rounds, smaller sizes (under ~2 minutes)
          --output DIR     write benchmark-results.md, benchmark-results.json,
                           benchmark-depth.svg and benchmark-producers.svg into DIR
          --only LIST      run only these sections: compare, drain, recovery, depth, producers, engine, queue, crash
          --scenario LIST  in the compare and queue sections, run only these comparisons (e.g. durable.64p.enqueue)
          --ours-only      run only ours in the comparisons (for profiling with perf)
          --drainers LIST  in the drain section, run only these: c4, c64, c4d, c64d, sqlite

        The engine section runs only when asked (--only engine; about a minute): OutboxLog alone
        against RocksDB's db_bench fillseq (Debian's rocksdb-tools; its rows are left out when
        db_bench is not installed) and the raw loops. With --output it writes benchmark-engine.md
        and benchmark-engine.json.

        The queue section runs only when asked (--only queue; about 5 minutes, 2 with --quick):
        OutboxQueue's DurableQueue against a Tape-style single-file queue, a SQLite table used as a
        queue (GRDB, WAL) and RocksDB used as a queue (its C library, loaded at run time from
        Debian's librocksdb; its rows are left out without it): produce, consume, producers with
        consumers, append-to-consume latency, at written and durable. With --output it writes
        benchmark-queue.md, benchmark-queue.json and benchmark-queue.svg.

        The crash section runs only when asked (--only crash; about 6 minutes, 3 with --quick):
        workers killed with SIGKILL at seeded random moments and restarted at once; exits 1 if an
        acknowledged entry is lost or a key is applied twice. With --output it writes
        benchmark-crash.md, benchmark-crash.json and benchmark-crash-restart.svg.
          --crash-seconds S     wall time per contender and workload (default 20; --quick 6)
          --crash-backlogs LIST backlogs for the restart rows (default 10000,100000,1000000)
          --crash-restarts N    restarts per backlog (default 5)
          --crash-seed N        the kill moments' seed (default 23)
          --crash-flush-backlog N  entries pending when the flush starts (default 10000)
          --crash-workloads LIST   enqueue, flush, restart (default all three)
          --crash-preallocation BYTES  our killed workers zero-fill their active segment
                                this far ahead (OutboxLog.Configuration.preallocation; default 0)
          --crash-before FILE   an earlier run's benchmark-crash.json: the chart draws its
                                restart rows too, dashed (before and after a change)

        Data goes to temporary directories under /tmp (or $OUTBOX_BENCH_TMPDIR), removed at the end.
        """

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--quick": options.quick = true
            case "--output":
                guard let value = iterator.next() else { fail("--output needs a directory") }
                options.output = value
            case "--only":
                guard let value = iterator.next() else { fail("--only needs a list") }
                options.sections = Set(value.split(separator: ",").map { String($0) })
            case "--scenario":
                guard let value = iterator.next() else { fail("--scenario needs a list") }
                options.scenarios = Set(value.split(separator: ",").map { String($0) })
            case "--ours-only": options.oursOnly = true
            case "--drainers":
                guard let value = iterator.next() else { fail("--drainers needs a list") }
                options.drainers = Set(value.split(separator: ",").map { String($0) })
            case "--crash-seconds":
                guard let value = iterator.next().flatMap(Double.init), value > 0 else { fail("--crash-seconds needs seconds") }
                options.crashSeconds = value
            case "--crash-backlogs":
                guard let value = iterator.next() else { fail("--crash-backlogs needs a list") }
                let backlogs = value.split(separator: ",").compactMap { Int($0) }
                guard !backlogs.isEmpty, backlogs.allSatisfy({ $0 >= 0 }) else { fail("--crash-backlogs needs numbers") }
                options.crashBacklogs = backlogs
            case "--crash-restarts":
                guard let value = iterator.next().flatMap(Int.init), value > 0 else { fail("--crash-restarts needs a count") }
                options.crashRestarts = value
            case "--crash-flush-backlog":
                guard let value = iterator.next().flatMap(Int.init), value >= 0 else { fail("--crash-flush-backlog needs a count") }
                options.crashFlushBacklog = value
            case "--crash-workloads":
                guard let value = iterator.next() else { fail("--crash-workloads needs a list") }
                options.crashWorkloads = Set(value.split(separator: ",").map { String($0) })
                guard options.crashWorkloads.isSubset(of: ["enqueue", "flush", "restart"]) else {
                    fail("--crash-workloads takes enqueue, flush, restart")
                }
            case "--crash-before":
                guard let value = iterator.next() else { fail("--crash-before needs a file") }
                options.crashBefore = value
            case "--crash-seed":
                guard let value = iterator.next().flatMap(UInt64.init) else { fail("--crash-seed needs a number") }
                options.crashSeed = value
            case "--crash-preallocation":
                guard let value = iterator.next().flatMap(Int.init), value >= 0 else {
                    fail("--crash-preallocation needs a byte count")
                }
                options.crashPreallocation = value
            case "-h", "--help":
                print(usage)
                exit(0)
            default: fail("unknown argument \(argument)")
            }
        }
        return options
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("outbox-compare: \(message)\n\n\(usage)\n".utf8))
        exit(2)
    }
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let quick = options.quick
let startedAt = monotonicNanoseconds()

let rounds = quick ? 2 : 5
let secondsPerRound = quick ? 0.25 : 1.0
let warmup = quick ? 0.1 : 0.3
let drainEntries = quick ? 2_000 : 20_000
let drainRounds = quick ? 1 : 3
let recoverySizes = quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000]
let depths = quick ? [1_000, 10_000, 100_000] : [1_000, 10_000, 100_000, 1_000_000]
let jsonDepths = quick ? [1_000, 10_000] : [1_000, 10_000, 100_000]
let producerCounts = quick ? [1, 4, 16, 64, 128] : [1, 2, 4, 8, 16, 32, 64, 128]
let producerRounds = quick ? 1 : 3
let producerSeconds = quick ? 0.25 : 0.5

let payload = Workload.jsonPayload(size: 256)

// What one enqueued entry takes in our log: the raw loops write this much per operation.
func measureRecordBytes() async throws -> Int {
    let directory = try TemporaryDirectory(prefix: "outbox-compare-probe")
    defer { directory.remove() }
    let store = try await LogOutboxStore.open(root: directory.filePath, partition: Workload.partition)
    let result = try await store.enqueue(Workload.request(payload: payload))
    try await store.close()
    guard case .enqueued(let entry) = result else { throw BenchError("probe enqueue was not new") }
    return LogWrite.value(Workload.entryKey(0), [UInt8](repeating: 0, count: entry.storedBytes)).frameSize
}

func sqliteFacts() throws -> (version: String, pragmas: [String: String]) {
    let directory = try TemporaryDirectory(prefix: "outbox-compare-probe")
    defer { directory.remove() }
    var pragmas: [String: String] = [:]
    var version = "?"
    for level in [SQLiteOutbox.Synchronous.full, .normal] {
        let database = try SQLiteOutbox(path: directory.appending("\(level.rawValue).sqlite"), synchronous: level)
        let (synchronous, journal) = try database.pragmas()
        version = try database.pool.read { try String.fetchOne($0, sql: "SELECT sqlite_version()") } ?? "?"
        pragmas["\(level.rawValue): PRAGMA synchronous"] = "\(synchronous)"
        pragmas["\(level.rawValue): PRAGMA journal_mode"] = journal
        try database.close()
    }
    return (version, pragmas)
}

let recordBytes = try await measureRecordBytes()
let (sqliteVersion, sqlitePragmas) = try sqliteFacts()
let probeDirectory = try TemporaryDirectory(prefix: "outbox-compare-probe")
let machine = MachineDescription.current(dataDirectory: probeDirectory.path)
probeDirectory.remove()

var report = Report(
    mode: quick ? "quick" : "full",
    command: (["cd Benchmarks && swift run -c release outbox-compare"] + CommandLine.arguments.dropFirst()).joined(separator: " "),
    machine: machine,
    settings: Settings(
        rounds: rounds, secondsPerRound: secondsPerRound, warmupSeconds: warmup, payloadBytes: payload.count,
        recordBytes: recordBytes, drainEntries: drainEntries, drainRounds: drainRounds, recoverySizes: recoverySizes,
        depths: depths, jsonDepths: jsonDepths, producerCounts: producerCounts, producerRounds: producerRounds,
        producerSeconds: producerSeconds, sqliteVersion: sqliteVersion, sqlitePragmas: sqlitePragmas))
progress(
    "outbox-compare (\(report.mode)): \(machine.processors) cores, load \(machine.loadAverage), data in \(machine.dataDirectory)"
)
progress("SQLite \(sqliteVersion), verified pragmas: \(sqlitePragmas.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))")
progress("one enqueued 256-byte entry = \(recordBytes) bytes in the log (what the raw loops write per operation)")

// MARK: Side-by-side workloads

if options.sections.contains("compare") {
    for specification in comparisonSpecifications(payload: payload, recordBytes: recordBytes) {
        if let scenarios = options.scenarios, !scenarios.contains(specification.id) { continue }
        let contenders = options.oursOnly ? specification.contenders.filter(\.isOurs) : specification.contenders
        report.comparisons.append(
            try await runComparison(
                id: specification.id, title: specification.title, detail: specification.detail, contenders: contenders,
                freshPerRound: specification.freshPerRound, rounds: rounds, seconds: secondsPerRound, warmup: warmup))
    }
}

if options.sections.contains("drain") {
    report.drain = try await runDrain(entries: drainEntries, rounds: drainRounds, only: options.drainers)
}
if options.sections.contains("recovery") {
    report.recovery = try await runRecovery(sizes: recoverySizes, warmOpens: quick ? 2 : 3)
}
if options.sections.contains("depth") {
    report.depth = try await runDepth(
        depths: depths, jsonDepths: Set(jsonDepths), durableSamples: quick ? 200 : 1_000,
        bufferedSamples: quick ? 2_000 : 10_000, sqliteSamples: quick ? 150 : 600, jsonOperationBudget: quick ? 1.0 : 4.0)
}
if options.sections.contains("producers") {
    report.producers = try await runProducers(counts: producerCounts, rounds: producerRounds, seconds: producerSeconds)
}

if options.sections.contains("engine") {
    if RocksDBBench.executable == nil { progress("db_bench not found (apt-get install -y rocksdb-tools): RocksDB's rows are left out") }
    var engine = report
    engine.comparisons = []
    for specification in engineSpecifications() {
        engine.comparisons.append(
            try await runComparison(
                id: specification.id, title: specification.title, detail: specification.detail,
                contenders: specification.contenders, freshPerRound: specification.freshPerRound, rounds: rounds,
                seconds: secondsPerRound, warmup: warmup))
    }
    try finish(engine, startedAt: startedAt, writingAs: "benchmark-engine", to: options.output, charts: false)
    if options.sections == ["engine"] { exit(0) }
}

if options.sections.contains("queue") {
    if RocksDBQueue.library == nil { progress("librocksdb not found (apt-get install -y librocksdb-dev or rocksdb-tools): RocksDB's rows are left out") }
    var queue = report
    queue.comparisons = []
    for specification in QueueScenarios.specifications(quick: quick) {
        if let scenarios = options.scenarios, !scenarios.contains(specification.id) { continue }
        let contenders = options.oursOnly ? specification.contenders.filter(\.isOurs) : specification.contenders
        queue.comparisons.append(
            try await runComparison(
                id: specification.id, title: specification.title, detail: specification.detail,
                contenders: contenders, freshPerRound: specification.freshPerRound, rounds: rounds,
                seconds: secondsPerRound, warmup: warmup))
    }
    try finish(queue, startedAt: startedAt, writingAs: "benchmark-queue", to: options.output, charts: false)
    if let output = options.output, let chart = queueChart(queue) {
        try Data(chart.utf8).write(to: URL(fileURLWithPath: output + "/benchmark-queue.svg"))
        progress("wrote \(output)/benchmark-queue.svg")
    }
    if options.sections == ["queue"] { exit(0) }
}

var crashViolations = 0
if options.sections.contains("crash") {
    let settings = CrashSettings(
        seconds: options.crashSeconds ?? (quick ? 6 : 20), seed: options.crashSeed, killAfter: 0.3...2.0,
        backlogs: options.crashBacklogs ?? (quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000]),
        restarts: options.crashRestarts ?? (quick ? 3 : 5),
        flushBacklog: options.crashFlushBacklog ?? (quick ? 2_000 : 10_000), workloads: options.crashWorkloads,
        preallocation: options.crashPreallocation)
    // The killed workers are this binary, spawned with this environment.
    setenv(CrashSettings.preallocationVariable, "\(settings.preallocation ?? 0)", 1)
    // Read first: a missing or unreadable file should stop the run before it starts.
    let before = try options.crashBefore.map { path in
        try JSONDecoder().decode(CrashReport.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }
    let results = try await runCrash(settings: settings)
    crashViolations = results.reduce(0) { $0 + $1.violations.count }
    let command = "cd Benchmarks && swift run -c release outbox-compare " + CommandLine.arguments.dropFirst().joined(separator: " ")
    let markdown = renderCrashMarkdown(
        results, settings: settings, command: command, date: machine.date, load: "\(machine.loadAverage) at the start, \(MachineDescription.loadAverageNow()) at the end")
    print(markdown)
    if let output = options.output {
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        try encoder.encode(CrashReport(settings: settings, machine: machine, results: results))
            .write(to: URL(fileURLWithPath: output + "/benchmark-crash.json"))
        try Data(markdown.utf8).write(to: URL(fileURLWithPath: output + "/benchmark-crash.md"))
        if let chart = crashRestartChart(results, date: machine.date, before: before) {
            try Data(chart.utf8).write(to: URL(fileURLWithPath: output + "/benchmark-crash-restart.svg"))
        }
        progress("wrote \(output)/benchmark-crash.md, .json, benchmark-crash-restart.svg")
    }
    if crashViolations > 0 {
        progress("crash: \(crashViolations) violation(s): acknowledged entries lost or keys applied twice")
        exit(1)
    }
    if options.sections == ["crash"] { exit(0) }
}

try finish(report, startedAt: startedAt, writingAs: "benchmark-results", to: options.output, charts: true)
