import Foundation
import IdempotencyKeyMiddleware
import Outbox
import OutboxLogTesting
import OutboxReferenceServer
import SystemPackage

/// The payload mode: large bodies kept in files beside the log, attacked
/// from both sides (Docs/RELIABILITY.md, "payload").
///
/// Even cycles **kill**: an app process (`outbox torture-worker payload`)
/// enqueues an album and photo uploads whose bodies go to payload files,
/// and drains them to the reference server, streaming each from its file;
/// it is killed with SIGKILL at one of the steps of writing or deleting a
/// file (in turn: every step, at a seeded occurrence), right after an
/// acknowledged enqueue, or once the server applied some uploads. It is
/// restarted until drained. Then: every upload was applied exactly once,
/// under its key, with exactly its bytes (the server checks each body
/// against its `Content-Digest` and refuses another); no entry was
/// quarantined; and no file is left in `payloads/`.
///
/// Odd cycles **corrupt** (``PayloadCorruption``): a closed queue's payload
/// file is damaged — a bit flipped, cut, grown, zeroed, deleted, replaced
/// by another entry's, renamed — and the queue reopened and drained in
/// process: the damaged entry must be quarantined with a typed reason
/// (never sent), every other one delivered with exactly its bytes.
enum PayloadTorture {
    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        guard let executable = options.workerExecutable else {
            report.notes.append("payload: skipped, no worker executable (the `outbox` binary) was given")
            return
        }
        var faults = ServerFaults.mixed(rate: 0.2, seed: options.seed)
        faults.retryAfterSeconds = 0
        faults.timeoutDelay = .milliseconds(50)
        faults.slowDelay = .milliseconds(10)
        faults.slowApplyDelay = .milliseconds(50)
        faults.halfOpen = 0
        var middleware = IdempotencyMiddleware<ReferenceContext>.Configuration()
        middleware.maximumBodySize = 8 << 20
        let server: ReferenceServer
        do {
            server = try await ReferenceServer.start(faults: faults, keyStore: InMemoryIdempotencyKeyStore(), middleware: middleware)
        } catch {
            report.notes.append("payload: skipped, the reference server did not start: \(error)")
            return
        }
        let root = options.directory.appending("payload")
        for cycle in budget.cycles {
            let ok: Bool
            if cycle % 2 == 0 {
                ok = await killCycle(cycle, server: server, executable: executable, root: root, options: options, report: &report)
            } else {
                ok = await PayloadCorruption.cycle(cycle, root: root, options: options, report: &report)
            }
            if !ok { break }
            if cycle % 10 == 9 {
                let counts = report[.payload]
                options.progress(
                    "payload: cycle \(cycle), \(counts.faults) faults, \(counts.recovered) entries checked, \(counts.violations) violations")
            }
        }
        await server.stop()
        if report[.payload].violations == 0 { await Blocking.remove(root.string) }
    }

    /// Where a kill cycle kills the app: a step of the payload files, or
    /// the two moments the parent sees.
    static var killPoints: [String] { PayloadWorker.killSteps + ["after-enqueue", "mid-drain"] }

    /// One kill cycle; `false` after a violation.
    static func killCycle(
        _ cycle: Int, server: ReferenceServer, executable: String, root: FilePath, options: TortureOptions,
        report: inout TortureReport
    ) async -> Bool {
        let directory = root.appending("cycle-\(cycle)")
        var random = SplitMix64.derived(seed: options.seed, stream: 0x5041_594B_0000_0000 | UInt64(cycle))
        return await TortureCycle(.payload, seed: options.seed, cycle: cycle).run(in: directory, report: &report) {
            (report: inout TortureReport) async throws(CycleViolation) in
            let count = 2 + random.next(below: 5)
            var job = PayloadWorker.Job(root: directory, baseURL: server.baseURL, seed: options.seed, cycle: cycle, count: count)
            job.encrypted = options.encrypted || (cycle / 2) % 2 == 1
            let point = killPoints[(cycle / 2) % killPoints.count]
            let policy = killPolicy(at: point, job: &job, server: server, &random)
            let rejectedBefore = server.ledger.rejected
            try await killUntilDrained(job, at: point, policy: policy, executable: executable, report: &report)
            report.count(.payload) { $0.acknowledged += count + 1 }
            try checkServer(job, rejectedBefore: rejectedBefore, server: server)
            try await checkDrainedQueue(job)
            if job.encrypted {
                let needles =
                    (1...count).map { PayloadWorker.marker(seed: options.seed, cycle: cycle, index: $0) } + [PayloadWorker.partition]
                try await TortureCycle.checkNoPlaintext(needles, under: directory)
            }
            report.count(.payload) {
                $0.cycles += 1
                $0.recovered += count + 1
            }
            await Blocking.remove(directory.string)
        }
    }

    /// How the first life dies at `point`: the parent kills it after an
    /// enqueue or mid-drain, or the app kills itself at a step of its files.
    static func killPolicy(
        at point: String, job: inout PayloadWorker.Job, server: ReferenceServer, _ random: inout SplitMix64
    ) -> ChildSupervisor.KillPolicy {
        let count = job.count
        var policy = ChildSupervisor.KillPolicy()
        policy.hangLimit = .seconds(120)
        switch point {
        case "after-enqueue":
            let target = random.next(below: count + 1)
            let delay = UInt32(random.next(below: 5_000))
            policy.onLine = { line, _ in line.hasPrefix("enqueued \(target) ") ? delay : nil }
        case "mid-drain":
            let baseline = server.ledger.photos
            let target = 1 + random.next(below: count)
            policy.when = { server.ledger.photos - baseline >= target }
        default:
            job.killAt = point
            job.killOccurrence = 1 + random.next(below: point.hasPrefix("file") && point != "fileRemoved" ? count : max(1, count / 2))
        }
        return policy
    }

    /// Runs the app, the first life under `policy`, the next ones calm,
    /// until it has drained its queue.
    static func killUntilDrained(
        _ job: PayloadWorker.Job, at point: String, policy: ChildSupervisor.KillPolicy, executable: String,
        report: inout TortureReport
    ) async throws(CycleViolation) {
        var calm = job
        calm.killAt = nil
        var app = AppLives(executable: executable, errorFile: job.root.string + ".stderr", limit: 3)
        var killed = false
        while !app.drained {
            let first = app.lives == 0
            let outcome = try await app.live(first ? job.arguments : calm.arguments, policy: first ? policy : .never, plan: point) {
                (line: WorkerLine, _: String) throws(CycleViolation) -> Bool in
                if case .enqueued = line { return true }
                return false
            }
            if outcome.hung { throw CycleViolation("life \(app.lives) (\(point)): the app did not drain its queue in time") }
            switch app.ending(of: outcome, bySupervisor: false) {
            case .killed:
                killed = true
                report.count(.payload) { $0.faults += 1 }
                report.detail(.payload, "apps killed at \(point)")
            case .drained:
                break
            case nil:
                throw CycleViolation("life \(app.lives) (\(point)): the app \(outcome.termination); stderr: \(outcome.errorTail)")
            }
            try app.checkLimit()
        }
        if !killed { report.detail(.payload, "kill point not reached (\(point))") }
    }

    /// The server's side: each upload applied once, with its own bytes.
    static func checkServer(_ job: PayloadWorker.Job, rejectedBefore: Int, server: ReferenceServer) throws(CycleViolation) {
        let ledger = server.ledger
        if ledger.rejected != rejectedBefore {
            throw CycleViolation("the server refused \(ledger.rejected - rejectedBefore) upload(s): a body did not match its digest")
        }
        for index in 0...job.count {
            let id = PayloadWorker.id(seed: job.seed, cycle: job.cycle, index: index)
            let key = OutboxEntry.derivedIdempotencyKey(partition: PayloadWorker.partition, id: id)
            guard ledger.applied[key] == 1 else {
                throw CycleViolation("entry \(index) (key \(key)) was applied \(ledger.applied[key] ?? 0) times")
            }
        }
    }

    /// The app's side: nothing quarantined, no file left behind.
    static func checkDrainedQueue(_ job: PayloadWorker.Job) async throws(CycleViolation) {
        let directory = job.root
        do {
            let store = try await LogOutboxStore.open(
                root: directory, partition: PayloadWorker.partition, configuration: PayloadWorker.configuration(job))
            let summary = try await store.summary()
            let recovery = store.payloadRecovery
            try await store.close()
            if summary.total != 0 { throw CycleViolation("\(summary.total) entries left after the drain: \(summary)") }
            if !recovery.removedOrphans.isEmpty {
                throw CycleViolation("the drained queue's open found payload files to recover: \(recovery)")
            }
            let left = try await Blocking.run { try PayloadCorruption.payloadFiles(under: directory.string) }
            if !left.isEmpty { throw CycleViolation("payload files left after every entry ended: \(left)") }
        } catch let violation as CycleViolation {
            throw violation
        } catch {
            throw CycleViolation("cannot check the drained queue: \(error)")
        }
    }
}
