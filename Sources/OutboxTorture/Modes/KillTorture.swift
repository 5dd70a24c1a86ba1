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
        func fail(_ detail: String) -> StateModel? {
            report.violation(.kill, seed: options.seed, cycle: cycle, "\(plan): \(detail)")
            return nil
        }
        let events = outcome.lines.map(WorkerLine.init(parsing:))
        var acknowledged = 0
        var started: Int?
        var ready = false
        var done = false
        for event in events {
            switch event {
            case .ready: ready = true
            case .ack(let step):
                // Steps are acknowledged in order, one at a time.
                guard step == acknowledged else { return fail("acknowledgement \(step) arrived after \(acknowledged) acknowledgements") }
                acknowledged += 1
            case .begin(let step): started = step
            case .done: done = true
            case .openFailed(let code, let message): return fail("the worker could not open the log: \(code) \(message)")
            default: return fail("the worker printed \"\(event.text)\"; stderr: \(outcome.errorTail)")
            }
        }
        if outcome.hung {
            return fail(
                "the worker hung (killed after \(acknowledged) acknowledgements, last lines \(outcome.lines.suffix(3)); "
                    + "thread stacks in worker.stderr.stacks)")
        }
        switch outcome.termination {
        case .signaled(let signal) where signal == SIGKILL && outcome.killed:
            report.count(.kill) { $0.faults += 1 }
        case .exited(LogWorker.Status.done) where done:
            // No kill planned, or it came after the worker had finished.
            report.detail(.kill, "clean exits")
        default:
            return fail("the worker \(outcome.termination) on its own; stderr: \(outcome.errorTail)")
        }
        report.count(.kill) { $0.acknowledged += acknowledged }
        if !ready { report.detail(.kill, "killed during open") }
        if let started, started == acknowledged, !done {
            report.detail(.kill, job.workload.operations()[started] == .compact ? "killed mid-compaction" : "killed mid-sync")
        }

        let oracle = PrefixOracle(start: start, operations: job.workload.operations())
        let expectation: RecoveryCheck.Expectation =
            done ? .complete : .crash(acknowledged: acknowledged, inFlight: 1, keeping: .written)
        switch await RecoveryCheck.reopen(job.directory, readOnly: plan.readOnlyCheck, oracle: oracle, expecting: expectation) {
        case .success(let passed):
            report.count(.kill) {
                $0.cycles += 1
                $0.recovered += passed.state.entries.count
            }
            if passed.recovery.truncatedTail != nil { report.detail(.kill, "torn tails cut") }
            if let interrupted = passed.recovery.interruptedCompaction {
                report.detail(.kill, "compactions \(interrupted == .completed ? "finished" : "rolled back") by recovery")
            }
            if plan.readOnlyCheck { report.detail(.kill, "repairs left to the next worker") }
            if !passed.logExisted { report.detail(.kill, "killed before the log directory existed") }
            return passed.state
        case .failure(let failure):
            return fail("\(acknowledged) acknowledged: \(failure)")
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
