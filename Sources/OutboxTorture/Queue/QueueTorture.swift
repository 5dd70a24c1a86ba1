import Foundation
import OutboxLogTesting
import OutboxQueue
import SystemPackage

/// The queue mode: a worker process (the `outbox` binary) runs two
/// producers, two named consumers and a trimmer on one queue and reports
/// every acknowledgement; the parent SIGKILLs it at a random moment and
/// holds the lines to ``QueueOracle``. Every cycle continues on the same
/// queue. At the end the parent opens the queue itself and reads every
/// consumer to its end: each acknowledged element must have reached each.
enum QueueTorture {
    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        guard let executable = options.workerExecutable else {
            report.notes.append("queue: skipped, no worker executable (the `outbox` binary) was given")
            return
        }
        let root = options.directory.appending("queue")
        do { try await Blocking.freshDirectory(root.string) } catch {
            report.notes.append("queue: cannot prepare \(root): \(error)")
            return
        }
        let before = report[.queue].violations
        var oracle = QueueOracle()
        var last = budget.first
        for cycle in budget.cycles {
            last = cycle
            guard await runCycle(cycle, executable: executable, root: root, oracle: &oracle, options: options, report: &report)
            else { break }
            if cycle % 25 == 0 {
                let counts = report[.queue]
                options.progress("queue: cycle \(cycle), \(counts.faults) kills, \(counts.acknowledged) acknowledged, \(counts.violations) violations")
            }
        }
        if report[.queue].violations == before {
            var driver = TortureCycle(.queue, seed: options.seed, cycle: last)
            driver.annotate = { "final read: " + $0 }
            _ = await driver.run(report: &report) { (report: inout TortureReport) async throws(CycleViolation) in
                try await readToTheEnd(root.appending("queue"), oracle: &oracle)
            }
        }
        if report[.queue].violations > before {
            report.notes.append("queue: the queue of the failing cycle is kept in \(root)")
        } else {
            await Blocking.remove(root.string)
        }
    }

    /// When to kill: most cycles at a random moment once the queue is open
    /// (a loaded machine can take long to start a worker, and a kill timed
    /// from the start would then often come before any work), some during
    /// the open, one in ten not at all.
    static func policy(seed: UInt64, cycle: Int) -> (ChildSupervisor.KillPolicy, String) {
        var random = SplitMix64.derived(seed: seed, stream: 0x514B_0000_0000_0000 | UInt64(cycle))
        var policy = ChildSupervisor.KillPolicy()
        policy.hangLimit = .seconds(60)
        switch random.next(below: 10) {
        case 0:
            return (policy, "no kill")
        case 1, 2:
            let microseconds = random.next(below: 100_000)
            policy.after = .microseconds(microseconds)
            return (policy, "kill \(microseconds) µs after start")
        default:
            let microseconds = UInt32(1 + random.next(below: 250_000))
            policy.onLine = { line, _ in line == "ready" ? microseconds : nil }
            return (policy, "kill \(microseconds) µs after the open")
        }
    }

    private static func runCycle(
        _ cycle: Int, executable: String, root: FilePath, oracle: inout QueueOracle, options: TortureOptions,
        report: inout TortureReport
    ) async -> Bool {
        let (policy, plan) = policy(seed: options.seed, cycle: cycle)
        var driver = TortureCycle(.queue, seed: options.seed, cycle: cycle)
        driver.annotate = { "\(plan): " + $0 }
        return await driver.run(report: &report) { (report: inout TortureReport) async throws(CycleViolation) in
            let arguments = [
                "torture-worker", "queue", "--directory", root.appending("queue").string, "--seed", "\(options.seed)",
                "--cycle", "\(cycle)", "--count", "500",
            ]
            let outcome: ChildSupervisor.Outcome
            do {
                outcome = try await ChildSupervisor.run(executable, arguments, errorFile: root.appending("worker.stderr").string, policy: policy)
            } catch {
                throw CycleViolation("cannot run the worker: \(error)")
            }
            try judge(outcome, oracle: &oracle, cycle: cycle, report: &report)
            report.count(.queue) { $0.cycles += 1 }
        }
    }

    /// Holds one life's lines to the oracle, and its end to the plan.
    private static func judge(
        _ outcome: ChildSupervisor.Outcome, oracle: inout QueueOracle, cycle: Int, report: inout TortureReport
    ) throws(CycleViolation) {
        if outcome.hung { throw CycleViolation("the worker hung; last lines \(outcome.lines.suffix(3))") }
        var life = QueueOracle.Life()
        var done = false
        var acknowledged = 0
        for line in outcome.lines {
            switch QueueWorkerLine(parsing: line) {
            case .ready: break
            case .resumed(let consumer, let after): try oracle.resumed(consumer, after: after, in: &life)
            case .appended(let producer, let index, let position):
                try oracle.appended("\(producer):\(cycle):\(index)", at: position)
                acknowledged += 1
            case .delivered(let consumer, let position, let element): try oracle.delivered(element, at: position, to: consumer, in: &life)
            case .committed(let consumer, let through): try oracle.committed(consumer, through: through, in: &life)
            case .rewound(let consumer): life.cursor[consumer] = life.committed[consumer]
            case .trimmed(let below): try oracle.trimmed(below: below, consumers: QueueWorker.consumers)
            case .done: done = true
            case .failed(let message): throw CycleViolation("a call failed in the worker: \(message)")
            case .unknown(let text): throw CycleViolation("the worker printed \"\(text)\"; stderr: \(outcome.errorTail)")
            }
        }
        try oracle.checkSkips(life)
        // The open recovered the queue, and its consumers' commits were checked.
        if !life.cursor.isEmpty { report.count(.queue) { $0.recovered += 1 } }
        switch outcome.termination {
        case .signaled(SIGKILL) where outcome.killed: report.count(.queue) { $0.faults += 1 }
        case .exited(0) where done: report.detail(.queue, "clean exits")
        default: throw CycleViolation("the worker \(outcome.termination) on its own; stderr: \(outcome.errorTail)")
        }
        report.count(.queue) { $0.acknowledged += acknowledged }
        report.detail(.queue, "redeliveries", life.redeliveries)
    }

    /// Reads every consumer to its end in this process; then every
    /// acknowledged element must have reached every consumer.
    private static func readToTheEnd(_ directory: FilePath, oracle: inout QueueOracle) async throws(CycleViolation) {
        do {
            let queue = try await DurableQueue.open(at: directory, configuration: QueueWorker.configuration())
            var life = QueueOracle.Life()
            for name in QueueWorker.consumers {
                let consumer = try await queue.consumer(named: name)
                try oracle.resumed(name, after: consumer.committed?.rawValue ?? 0, in: &life)
                while true {
                    let page = try await consumer.next()
                    if page.isEmpty { break }
                    for element in page {
                        try oracle.delivered(QueueWorker.name(of: element.bytes), at: element.position.rawValue, to: name, in: &life)
                    }
                }
            }
            try await queue.close()
            try oracle.checkSkips(life)
        } catch let violation as CycleViolation {
            throw violation
        } catch {
            throw CycleViolation("the queue did not open or read: \(error)")
        }
        try oracle.checkEveryDelivered(QueueWorker.consumers)
    }
}
