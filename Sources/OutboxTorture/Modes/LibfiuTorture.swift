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
        func violation(_ detail: String) -> Bool {
            let shown = cycleNumber ?? number
            // libfiu draws its faults itself: the seed replays the workload, not the faults.
            report.violation(
                .iofault, seed: seed, cycle: shown, "libfiu run \(number): \(detail)",
                reproduce: "outbox torture --mode iofault --seed \(seed) --cycles \(shown + 1) (libfiu's own draws differ each run)")
            return false
        }
        if number == 0 {
            do { try await Blocking.freshDirectory(root.string) } catch { return violation("cannot prepare \(root): \(error)") }
        }
        var random = SplitMix64.derived(seed: seed, stream: 0x4649_5500_0000_0000 | UInt64(number))
        let point = points[random.next(below: points.count)]
        let probability = Double(random.next(in: point.probability)) / 1000
        let errno = [5, 28, 0][random.next(below: 3)]  // EIO, ENOSPC, or libfiu's own pick
        let command = "enable_random name=\(point.name),probability=\(probability)" + (errno == 0 ? "" : ",failinfo=\(errno)")
        let job = LogWorker.Job(
            directory: directory, seed: seed, stream: 0x4649_0000_0000 | UInt64(number), count: 300 + random.next(below: 500),
            compactionHeavy: true)
        let arguments = ["-x", "-f", "", "-c", command, executable] + LogWorkerArguments.make(job)
        let outcome: ChildSupervisor.Outcome
        do {
            outcome = try await ChildSupervisor.run(
                fiuRun, arguments, errorFile: root.appending("worker.stderr").string, policy: Self.policy)
        } catch {
            return violation("cannot run fiu-run: \(error)")
        }
        let context = "fiu-run -c '\(command)'"
        var acknowledged = 0
        var failed = false
        var done = false
        for line in outcome.lines {
            switch WorkerLine(parsing: line) {
            case .ready: break
            case .begin: break
            case .ack(let step):
                guard step == acknowledged else { return violation("\(context): ack \(step) after \(acknowledged) acks") }
                acknowledged += 1
            case .fail(_, let code, let message):
                failed = true
                guard code == "io" || code == "poisoned" else {
                    return violation("\(context): a step failed with \(code), not an I/O error: \(message)")
                }
            case .openFailed(let code, let message):
                failed = true
                guard code == "io" else {
                    return violation("\(context): the open failed with \(code), not an I/O error: \(message)")
                }
            case .poison(let ok, let detail):
                if !ok { return violation("\(context): \(detail)") }
                report.detail(.iofault, "libfiu: poisoned logs refused the next append")
            case .done: done = true
            default: return violation("\(context): the worker printed \"\(line)\"; stderr: \(outcome.errorTail)")
            }
        }
        switch outcome.termination {
        case .exited(LogWorker.Status.done) where done: break
        case .exited(LogWorker.Status.stepFailed) where failed, .exited(LogWorker.Status.openFailed) where failed:
            report.count(.iofault) { $0.faults += 1 }
            report.detail(.iofault, "libfiu: real syscall faults (\(point.name.split(separator: "/").last!))")
        case _ where outcome.hung && outcome.lines.isEmpty
            && Self.deadlockedInLibfiu(stacks: root.appending("worker.stderr.stacks")):
            // Still held to the oracle below, as a worker killed before it
            // acknowledged anything.
            report.detail(.iofault, "libfiu: workers deadlocked inside libfiu before printing anything (killed, not counted as a fault)")
        default:
            let stacks = outcome.hung ? " (thread stacks in \(root.appending("worker.stderr.stacks")))" : ""
            return violation(
                "\(context): the worker \(outcome.hung ? "hung and was " : "")\(outcome.termination) after printing "
                    + "\(outcome.lines.suffix(3))\(stacks); stderr: \(outcome.errorTail)")
        }
        report.count(.iofault) { $0.acknowledged += acknowledged }
        report.detail(.iofault, "libfiu: runs")

        let oracle = PrefixOracle(start: state, operations: job.workload.operations())
        let expectation: RecoveryCheck.Expectation =
            done ? .complete : .crash(acknowledged: acknowledged, inFlight: 1, keeping: .written)
        switch await RecoveryCheck.reopen(directory, oracle: oracle, expecting: expectation) {
        case .success(let passed):
            state = passed.state
            report.count(.iofault) {
                $0.cycles += 1
                $0.recovered += passed.state.entries.count
            }
            return true
        case .failure(let failure):
            return violation("\(context), \(acknowledged) acknowledged: \(failure)")
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
