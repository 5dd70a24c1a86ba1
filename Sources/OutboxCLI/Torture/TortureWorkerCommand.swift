import ArgumentParser
import Foundation
import OutboxTorture
import SystemPackage

/// `outbox torture-worker log|outbox …`: the child processes `outbox
/// torture` spawns and kills. Hidden: its output is a line protocol for the
/// parent (see `WorkerLine`), not for people.
struct TortureWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "torture-worker",
        abstract: "A worker process of `outbox torture` (internal).",
        shouldDisplay: false,
        subcommands: [
            LogWorkerCommand.self, OutboxWorkerCommand.self, SpoolOwnerCommand.self, PayloadWorkerCommand.self, QueueWorkerCommand.self,
        ]
    )

    /// The most steps or entries one worker runs (`torture` asks for
    /// hundreds); an entry's index must stay below 2^20 in its seed stream.
    static let maximumCount = 100_000

    /// Checks a worker's `--cycle` and `--count`, which feed seed streams
    /// (`cycle << 20 | index`) and loop bounds.
    static func validate(cycle: Int, count: Int) throws(ValidationError) {
        try OptionRange.require(cycle, in: 0...TortureCommand.maximumCycle * 2, "--cycle")
        try OptionRange.require(count, in: 0...maximumCount, "--count")
    }
}

/// `outbox torture-worker log --directory D --seed S --stream N --count C [--compaction-heavy]`
struct LogWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log", abstract: "Run one seeded log workload, printing each acknowledgement.")

    @Option var directory: String
    @Option var seed: UInt64
    @Option var stream: UInt64
    @Option var count: Int
    @Flag var compactionHeavy = false

    func validate() throws {
        try OptionRange.require(count, in: 0...TortureWorkerCommand.maximumCount, "--count")
    }

    func run() async throws {
        let status = await LogWorker.run(
            .init(directory: FilePath(directory), seed: seed, stream: stream, count: count, compactionHeavy: compactionHeavy))
        if status != 0 { throw ExitCode(status) }
    }
}

/// `outbox torture-worker queue --directory D --seed S --cycle C --count N`
struct QueueWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue", abstract: "Run two producers, two consumers and a trimmer on a queue, printing each acknowledgement.")

    @Option var directory: String
    @Option var seed: UInt64
    @Option var cycle: Int
    @Option var count: Int

    func validate() throws {
        try TortureWorkerCommand.validate(cycle: cycle, count: count)
    }

    func run() async throws {
        let status = await QueueWorker.run(.init(directory: FilePath(directory), seed: seed, cycle: cycle, count: count))
        if status != 0 { throw ExitCode(status) }
    }
}

/// The options of an app worker (`outbox`, `payload`): its queue, the
/// server it drains to, and the seeded list it enqueues.
struct AppWorkerOptions: ParsableArguments {
    @Option var root: String
    @Option var baseURL: String
    @Option var seed: UInt64
    @Option var cycle: Int
    @Option var count: Int
    @Flag var encrypted = false

    func validate() throws {
        try TortureWorkerCommand.validate(cycle: cycle, count: count)
    }

    var url: URL {
        get throws(ValidationError) {
            guard let url = URL(string: baseURL) else { throw ValidationError("bad --base-url \(baseURL)") }
            return url
        }
    }
}

/// `outbox torture-worker outbox --root R --base-url URL --seed S --cycle C --count N`
struct OutboxWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox", abstract: "Enqueue a seeded list of writes and drain them to a server.")

    @OptionGroup var options: AppWorkerOptions

    func run() async throws {
        var job = OutboxWorker.Job(
            root: FilePath(options.root), baseURL: try options.url, seed: options.seed, cycle: options.cycle, count: options.count)
        job.encrypted = options.encrypted
        let status = await OutboxWorker.run(job)
        if status != 0 { throw ExitCode(status) }
    }
}

/// `outbox torture-worker spool-owner --root R --base-url URL [--key-file F]`
struct SpoolOwnerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spool-owner", abstract: "Hold a queue, move its spools in and drain it, until told the writers are done.")

    @Option var root: String
    @Option var baseURL: String
    @Option var keyFile: String?

    func run() async throws {
        guard let url = URL(string: baseURL) else { throw ValidationError("bad --base-url \(baseURL)") }
        let key = try keyFile.map { try OutboxRootOptions.readKey($0, option: "--key-file") }
        let status = await SpoolOwner.run(SpoolOwner.Job(root: FilePath(root), baseURL: url, encryptionKey: key))
        if status != 0 { throw ExitCode(status) }
    }
}

/// `outbox torture-worker payload --root R --base-url URL --seed S --cycle C --count N [--encrypted] [--kill-at STEP --kill-occurrence K]`
struct PayloadWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "payload", abstract: "Enqueue seeded photo uploads (payload files) and drain them to a server.")

    @OptionGroup var options: AppWorkerOptions
    @Option var killAt: String?
    @Option var killOccurrence = 1

    func validate() throws {
        try OptionRange.require(killOccurrence, in: 1...TortureWorkerCommand.maximumCount, "--kill-occurrence")
    }

    func run() async throws {
        let url = try options.url
        if let killAt, !PayloadWorker.killSteps.contains(killAt) {
            throw ValidationError("--kill-at must be one of \(PayloadWorker.killSteps.joined(separator: ", "))")
        }
        var job = PayloadWorker.Job(
            root: FilePath(options.root), baseURL: url, seed: options.seed, cycle: options.cycle, count: options.count)
        job.encrypted = options.encrypted
        job.killAt = killAt
        job.killOccurrence = killOccurrence
        let status = await PayloadWorker.run(job)
        if status != 0 { throw ExitCode(status) }
    }
}
