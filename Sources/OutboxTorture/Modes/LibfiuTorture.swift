import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// Real-syscall faults with libfiu: the log worker runs under
/// `fiu-run -x`, whose preloaded library makes the real `pwrite`,
/// `fdatasync`, `fsync`, `rename` or `ftruncate` of the process fail at
/// random (with EIO, ENOSPC, or an errno libfiu picks). The worker stops
/// at its first failed step, after checking that the log refuses the next
/// append (poisoned), and exits; the parent reopens the log without faults
/// and holds it to the oracle: every acknowledged `written`/`durable` step
/// is there. Cycles continue on the same log, like the kill loop.
///
/// This checks the engine against the real system calls, where the
/// simulated file system checks it against a model of them.
struct LibfiuTorture {
    /// `fiu-run`, if installed.
    static let fiuRun: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/fiu-run" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// A libfiu failure point (its name in libfiu's POSIX preload) and the
    /// range its probability is drawn from, in per mille.
    struct Point: Sendable {
        var name: String
        var probability: ClosedRange<Int>
    }

    /// The failure points the torture uses: rare enough that a run gets
    /// some way before the first fault, so faults hit a log with history.
    static let defaultPoints: [Point] = [
        Point(name: "posix/io/rw/pwrite", probability: 2...30),
        Point(name: "posix/io/sync/fdatasync", probability: 5...60),
        Point(name: "posix/io/sync/fsync", probability: 20...200),  // directory syncs: rarer calls
        Point(name: "posix/io/dir/rename", probability: 20...200),
        Point(name: "posix/io/rw/ftruncate", probability: 100...500),  // only when a torn tail is cut
    ]

    let executable: String
    let fiuRun: String
    let root: FilePath
    let points: [Point]
    private var state = StateModel()
    private var cycle = 0

    init(executable: String, fiuRun: String, root: FilePath, points: [Point] = Self.defaultPoints) {
        self.executable = executable
        self.fiuRun = fiuRun
        self.root = root
        self.points = points
    }

    var directory: FilePath { root.appending("log") }

    /// No kill: the worker stops at its first failed step. A run takes a
    /// second or two; one still running after 30 s is hung.
    static var policy: ChildSupervisor.KillPolicy {
        var policy = ChildSupervisor.KillPolicy.never
        policy.hangLimit = .seconds(30)
        return policy
    }

    /// One run of the worker under libfiu; `false` after a violation.
    /// - Parameter cycleNumber: the iofault cycle this run stands in for (for the report).
    mutating func cycle(seed: UInt64, cycleNumber: Int? = nil, report: inout TortureReport) async -> Bool {
        let number = cycle
        cycle += 1
        let shown = cycleNumber ?? number
        var driver = TortureCycle(.iofault, seed: seed, cycle: shown)
        driver.annotate = { "libfiu run \(number): " + $0 }
        // libfiu draws its faults itself: the seed replays the workload, not the faults.
        driver.reproduce = "outbox torture --mode iofault --seed \(seed) --cycles \(shown + 1) (libfiu's own draws differ each run)"
        return await driver.run(report: &report) { (report: inout TortureReport) async throws(CycleViolation) in
            if number == 0 {
                do { try await Blocking.freshDirectory(root.string) } catch { throw CycleViolation("cannot prepare \(root): \(error)") }
            }
            let run = draw(seed: seed, number: number)
            let outcome = try await runWorker(run)
            let lines = try Self.read(outcome, context: run.context, report: &report)
            try judge(outcome, lines, run, report: &report)
            report.count(.iofault) { $0.acknowledged += lines.acknowledged }
            report.detail(.iofault, "libfiu: runs")
            let oracle = PrefixOracle(start: state, operations: run.job.workload.operations())
            let expectation: RecoveryCheck.Expectation =
                lines.done ? .complete : .crash(acknowledged: lines.acknowledged, inFlight: 1, keeping: .written)
            state = try await driver.reopenAndCount(
                directory, oracle: oracle, expecting: expectation, context: "\(run.context), \(lines.acknowledged) acknowledged",
                report: &report
            ).state
        }
    }

    /// One run's draws: the failure point, its probability and errno, and the worker's job.
    struct Run {
        let point: Point
        let command: String
        let job: LogWorker.Job
        var context: String { "fiu-run -c '\(command)'" }
    }

    /// Draws run `number`'s fault and workload from the seed.
    func draw(seed: UInt64, number: Int) -> Run {
        var random = SplitMix64.derived(seed: seed, stream: 0x4649_5500_0000_0000 | UInt64(number))
        let point = points[random.next(below: points.count)]
        let probability = Double(random.next(in: point.probability)) / 1000
        let errno = [5, 28, 0][random.next(below: 3)]  // EIO, ENOSPC, or libfiu's own pick
        let command = "enable_random name=\(point.name),probability=\(probability)" + (errno == 0 ? "" : ",failinfo=\(errno)")
        let job = LogWorker.Job(
            directory: directory, seed: seed, stream: 0x4649_0000_0000 | UInt64(number), count: 300 + random.next(below: 500),
            compactionHeavy: true)
        return Run(point: point, command: command, job: job)
    }

    /// Runs the log worker under `fiu-run`.
    func runWorker(_ run: Run) async throws(CycleViolation) -> ChildSupervisor.Outcome {
        let arguments = ["-x", "-f", "", "-c", run.command, executable] + LogWorkerArguments.make(run.job)
        do {
            return try await ChildSupervisor.run(
                fiuRun, arguments, errorFile: root.appending("worker.stderr").string, policy: Self.policy)
        } catch {
            throw CycleViolation("cannot run fiu-run: \(error)")
        }
    }

    /// What the worker's lines said.
    struct Lines {
        var acknowledged = 0
        var failed = false
        var done = false
    }

    /// Reads the worker's lines: acknowledgements in order, and any failure an I/O error.
    static func read(
        _ outcome: ChildSupervisor.Outcome, context: String, report: inout TortureReport
    ) throws(CycleViolation) -> Lines {
        var lines = Lines()
        for line in outcome.lines {
            switch WorkerLine(parsing: line) {
            case .ready: break
            case .begin: break
            case .ack(let step):
                guard step == lines.acknowledged else { throw CycleViolation("\(context): ack \(step) after \(lines.acknowledged) acks") }
                lines.acknowledged += 1
            case .fail(_, let code, let message):
                lines.failed = true
                guard code == "io" || code == "poisoned" else {
                    throw CycleViolation("\(context): a step failed with \(code), not an I/O error: \(message)")
                }
            case .openFailed(let code, let message):
                lines.failed = true
                guard code == "io" else { throw CycleViolation("\(context): the open failed with \(code), not an I/O error: \(message)") }
            case .poison(let ok, let detail):
                if !ok { throw CycleViolation("\(context): \(detail)") }
                report.detail(.iofault, "libfiu: poisoned logs refused the next append")
            case .done: lines.done = true
            default: throw CycleViolation("\(context): the worker printed \"\(line)\"; stderr: \(outcome.errorTail)")
            }
        }
        return lines
    }

    /// How the worker ended must match what it printed.
    func judge(
        _ outcome: ChildSupervisor.Outcome, _ lines: Lines, _ run: Run, report: inout TortureReport
    ) throws(CycleViolation) {
        switch outcome.termination {
        case .exited(LogWorker.Status.done) where lines.done: break
        case .exited(LogWorker.Status.stepFailed) where lines.failed, .exited(LogWorker.Status.openFailed) where lines.failed:
            report.count(.iofault) { $0.faults += 1 }
            report.detail(.iofault, "libfiu: real syscall faults (\(run.point.name.split(separator: "/").last!))")
        case _ where outcome.hung && outcome.lines.isEmpty
            && Self.deadlockedInLibfiu(stacks: root.appending("worker.stderr.stacks")):
            // Still held to the oracle below, as a worker killed before it
            // acknowledged anything.
            report.detail(.iofault, "libfiu: workers deadlocked inside libfiu before printing anything (killed, not counted as a fault)")
        default:
            let stacks = outcome.hung ? " (thread stacks in \(root.appending("worker.stderr.stacks")))" : ""
            throw CycleViolation(
                "\(run.context): the worker \(outcome.hung ? "hung and was " : "")\(outcome.termination) after printing "
                    + "\(outcome.lines.suffix(3))\(stacks); stderr: \(outcome.errorTail)")
        }
    }

    /// Whether a hung worker's threads are all blocked inside libfiu itself:
    /// its preload wraps `malloc`, `open` and `dlsym`, and at start-up (the
    /// dynamic loader opening `libgcc_s` while a dispatch thread opens a
    /// file) the wrappers can deadlock on libfiu's own locks before the
    /// worker has run a line of its code (seen about once in 1,000 runs).
    /// Any thread elsewhere makes it a hang of ours.
    static func deadlockedInLibfiu(stacks path: FilePath) -> Bool {
        guard let text = try? String(contentsOfFile: path.string, encoding: .utf8) else { return false }
        // One block per thread, from its `Thread N (…)` line (gdb's header
        // lines, if any, before the first are not a thread).
        var threads: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("Thread ") {
                threads.append(String(line))
            } else if !threads.isEmpty {
                threads[threads.count - 1] += "\n" + line
            }
        }
        return !threads.isEmpty && threads.allSatisfy { $0.contains("fiu_fail") }
    }
}
