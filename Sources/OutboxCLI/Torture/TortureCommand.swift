import ArgumentParser
import Foundation
import OutboxTorture
import SystemPackage

/// `outbox torture [--seconds S] [--seed N] [--dir D] [--mode M] [--json]`
struct TortureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "torture",
        abstract: "Try to break the log's promise: kill -9 loops, power loss, I/O faults, corruption, app kills mid-drain.",
        discussion: """
            Runs the crash-recovery torture suite and checks every recovery against an oracle: \
            every acknowledged write survives the crash it was promised to survive, the log is \
            always a prefix of its history (no hole, no reordering), no record that fails its \
            checksum or was never written is ever returned, and the outbox applies each write \
            exactly once. Modes: kill (SIGKILL of a worker process, this binary), powerloss \
            (simulated), iofault (EIO/ENOSPC, simulated and, when fiu-run is installed, real \
            syscalls under libfiu), corrupt (damaged copies of real logs, and of real queues' \
            checkpoints, spools and payload files), outbox (the app killed mid-drain against a \
            loopback server), outboxfault (power loss and failed syncs, \
            simulated, while the app drains to a loopback server), lock (a log held by this process \
            attacked by more opens here and from another process), spool (writer processes, \
            `outbox enqueue`, write through spools into a queue an owner process holds and drains \
            to a loopback server, any of them killed), or all. Prints progress and a \
            report; exits 1 if any violation was found, naming the seed that reproduces it. See \
            Docs/RELIABILITY.md.
            """
    )

    @Option(
        help: "Stop starting new cycles after this long in total, shared among the modes (default 60 without --cycles; plain numbers are seconds, or 10m, 2h; up to 100 years).",
        transform: DurationArgument.parse)
    var seconds: Duration?

    @Option(help: "Run at most this many cycles per mode (instead of, or as well as, --seconds; 1...\(maximumCycle)).")
    var cycles: Int?

    @Option(help: "Seeds every workload, fault and damage; random (and printed) when not given.")
    var seed: UInt64?

    @Option(name: .customLong("dir"), help: "A scratch directory for the logs (default: a new temporary one).")
    var directory: String?

    @Option(help: "kill, powerloss, iofault, corrupt, outbox, outboxfault, lock, spool, a comma-separated list of them, or all.")
    var mode = "all"

    @Option(help: "The first cycle number (with --cycles 1: replay one cycle named in a violation report; 0...\(maximumCycle)).")
    var firstCycle = 0

    /// The largest `--cycles` and `--first-cycle`: cycle numbers feed the
    /// seeds' streams and the worker's command line, and their sum must fit.
    static let maximumCycle = 1_000_000_000

    @Option(help: "The outbox binary the kill, outbox, lock, spool and libfiu modes run as their worker (default: this one).")
    var worker: String?

    @Flag(help: "Skip the real-syscall faults under fiu-run (libfiu) in the iofault mode.")
    var noLibfiu = false

    @Flag(help: "Run the outbox, outboxfault and spool modes on encrypted stores; the outbox mode also checks that no app text reaches the files.")
    var encrypted = false

    @Flag(help: "Print the report as one JSON object (progress goes to standard error).")
    var json = false

    var modes: [TortureMode] {
        get throws {
            if mode == "all" { return TortureMode.allCases }
            return try mode.split(separator: ",").map { name in
                guard let mode = TortureMode(rawValue: String(name)) else {
                    throw ValidationError(
                        "unknown mode \"\(name)\": use \(TortureMode.allCases.map(\.rawValue).joined(separator: ", ")) or all")
                }
                return mode
            }
        }
    }

    func validate() throws {
        _ = try modes
        if let seconds { try OptionRange.require(seconds, "--seconds", positive: true) }
        try OptionRange.require(cycles, in: 1...Self.maximumCycle, "--cycles")
        try OptionRange.require(firstCycle, in: 0...Self.maximumCycle, "--first-cycle")
        if let worker, !FileManager.default.isExecutableFile(atPath: worker) {
            throw ValidationError("--worker \(worker) is not an executable file")
        }
    }

    func run() async throws {
        let seed = self.seed ?? UInt64.random(in: 0...UInt64(Int64.max))
        let scratch = directory ?? (FileManager.default.temporaryDirectory.path + "/outbox-torture-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let json = self.json
        let started = Date()
        let progress: @Sendable (String) -> Void = { line in
            let stamp = String(format: "[%6.1fs] ", Date().timeIntervalSince(started))
            if json { StandardStreams.writeError(stamp + line) } else { StandardStreams.writeLine(stamp + line) }
        }
        var options = TortureOptions(
            seed: seed, modes: try modes, seconds: seconds?.seconds ?? (cycles == nil ? 60 : nil), cycles: cycles,
            directory: FilePath(scratch), workerExecutable: worker ?? Self.executablePath, progress: progress)
        options.firstCycle = firstCycle
        options.libfiu = !noLibfiu
        options.encrypted = encrypted
        let report = await Torture.run(options)
        if directory == nil && report.violations.isEmpty { try? FileManager.default.removeItem(atPath: scratch) }
        try StandardStreams.writeReport(json: json, report, text: report.text)
        if !report.violations.isEmpty {
            StandardStreams.writeError("error: \(report.violations.count) violation(s); reproduce with --seed \(seed)")
            throw ExitCode(1)
        }
    }

    /// This binary: the worker the kill and outbox modes spawn.
    static var executablePath: String? {
        #if os(Linux)
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        #endif
        return Bundle.main.executablePath
    }
}
