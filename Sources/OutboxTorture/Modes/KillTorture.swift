import Foundation
import OutboxLog
import SystemPackage

/// The kill -9 loop: a worker process (the `outbox` binary itself) runs a
/// seeded workload on a real directory with the real file system and
/// reports every acknowledgement over a pipe; the parent SIGKILLs it at a
/// random moment, reopens the log, and holds it to the prefix oracle. Every
/// cycle continues on the same log from the state the last one recovered.
///
/// `kill -9` does not lose the page cache, so every `written` and `durable`
/// acknowledgement must survive; `buffered` ones may be lost, but only as a
/// suffix of the history.
enum KillTorture {
    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        guard let executable = options.workerExecutable else {
            report.notes.append("kill: skipped, no worker executable (the `outbox` binary) was given")
            return
        }
        let root = options.directory.appending("kill")
        do { try await Blocking.freshDirectory(root.string) } catch {
            report.notes.append("kill: cannot prepare \(root): \(error)")
            return
        }
        let before = report[.kill].violations
        await loop(executable: executable, root: root, options: options, budget: budget, report: &report)
        if report[.kill].violations > before {
            report.notes.append("kill: the log of the failing cycle is kept in \(root)")
        } else {
            await Blocking.remove(root.string)
        }
    }

    private static func loop(
        executable: String, root: FilePath, options: TortureOptions, budget: Budget, report: inout TortureReport
    ) async {
        let directory = root.appending("log")
        var state = StateModel()
        for cycle in budget.cycles {
            let plan = KillPlan.draw(seed: options.seed, cycle: cycle)
            let job = LogWorker.Job(
                directory: directory, seed: options.seed, stream: 0x4B00_0000_0000 | UInt64(cycle), count: plan.count,
                compactionHeavy: true)
            let outcome: ChildSupervisor.Outcome
            do {
                outcome = try await ChildSupervisor.run(
                    executable, LogWorkerArguments.make(job), errorFile: root.appending("worker.stderr").string,
                    policy: plan.policy)
            } catch {
                report.violation(.kill, seed: options.seed, cycle: cycle, "cannot run the worker: \(error)")
                return
            }
            guard
                let next = await check(
                    cycle: cycle, plan: plan, job: job, outcome: outcome, start: state, options: options,
                    report: &report)
            else { return }  // a violation leaves the log in a state no later cycle can reason about
            state = next
            if cycle % 25 == 0 {
                let counts = report[.kill]
                options.progress(
                    "kill: cycle \(cycle), \(counts.faults) kills, \(counts.acknowledged) acknowledged, \(counts.violations) violations")
            }
        }
    }

    /// Checks one cycle; returns the recovered state, or `nil` after a violation.
    private static func check(
        cycle: Int, plan: KillPlan, job: LogWorker.Job, outcome: ChildSupervisor.Outcome, start: StateModel,
        options: TortureOptions, report: inout TortureReport
    ) async -> StateModel? {
        var driver = TortureCycle(.kill, seed: options.seed, cycle: cycle)
        driver.annotate = { "\(plan): " + $0 }
        var recovered: StateModel?
        _ = await driver.run(report: &report) { (report: inout TortureReport) async throws(CycleViolation) in
            let lines = try read(outcome)
            try judge(outcome, lines, job: job, report: &report)
            let oracle = PrefixOracle(start: start, operations: job.workload.operations())
            let expectation: RecoveryCheck.Expectation =
                lines.done ? .complete : .crash(acknowledged: lines.acknowledged, inFlight: 1, keeping: .written)
            let passed = try await driver.reopenAndCount(
                job.directory, readOnly: plan.readOnlyCheck, oracle: oracle, expecting: expectation,
                context: "\(lines.acknowledged) acknowledged", report: &report)
            if passed.recovery.truncatedTail != nil { report.detail(.kill, "torn tails cut") }
            if let interrupted = passed.recovery.interruptedCompaction {
                report.detail(.kill, "compactions \(interrupted == .completed ? "finished" : "rolled back") by recovery")
            }
            if plan.readOnlyCheck { report.detail(.kill, "repairs left to the next worker") }
            if !passed.logExisted { report.detail(.kill, "killed before the log directory existed") }
            recovered = passed.state
        }
        return recovered
    }

    /// What the worker's lines said.
    struct Lines {
        var acknowledged = 0
        var started: Int?
        var ready = false
        var done = false
    }

    /// Reads the worker's lines: steps acknowledged in order, one at a time.
    private static func read(_ outcome: ChildSupervisor.Outcome) throws(CycleViolation) -> Lines {
        var lines = Lines()
        for event in outcome.lines.map(WorkerLine.init(parsing:)) {
            switch event {
            case .ready: lines.ready = true
            case .ack(let step):
                guard step == lines.acknowledged else {
                    throw CycleViolation("acknowledgement \(step) arrived after \(lines.acknowledged) acknowledgements")
                }
                lines.acknowledged += 1
            case .begin(let step): lines.started = step
            case .done: lines.done = true
            case .openFailed(let code, let message): throw CycleViolation("the worker could not open the log: \(code) \(message)")
            default: throw CycleViolation("the worker printed \"\(event.text)\"; stderr: \(outcome.errorTail)")
            }
        }
        return lines
    }

    /// The worker was killed, or finished: never hung, never died on its own.
    private static func judge(
        _ outcome: ChildSupervisor.Outcome, _ lines: Lines, job: LogWorker.Job, report: inout TortureReport
    ) throws(CycleViolation) {
        if outcome.hung {
            throw CycleViolation(
                "the worker hung (killed after \(lines.acknowledged) acknowledgements, last lines \(outcome.lines.suffix(3)); "
                    + "thread stacks in worker.stderr.stacks)")
        }
        switch outcome.termination {
        case .signaled(let signal) where signal == SIGKILL && outcome.killed:
            report.count(.kill) { $0.faults += 1 }
        case .exited(LogWorker.Status.done) where lines.done:
            // No kill planned, or it came after the worker had finished.
            report.detail(.kill, "clean exits")
        default:
            throw CycleViolation("the worker \(outcome.termination) on its own; stderr: \(outcome.errorTail)")
        }
        report.count(.kill) { $0.acknowledged += lines.acknowledged }
        if !lines.ready { report.detail(.kill, "killed during open") }
        if let started = lines.started, started == lines.acknowledged, !lines.done {
            report.detail(.kill, job.workload.operations()[started] == .compact ? "killed mid-compaction" : "killed mid-sync")
        }
    }
}

/// The command line of a log worker: `outbox torture-worker log …`.
enum LogWorkerArguments {
    static func make(_ job: LogWorker.Job) -> [String] {
        [
            "torture-worker", "log", "--directory", job.directory.string, "--seed", "\(job.seed)", "--stream",
            "\(job.stream)", "--count", "\(job.count)",
        ] + (job.compactionHeavy ? ["--compaction-heavy"] : [])
    }
}
