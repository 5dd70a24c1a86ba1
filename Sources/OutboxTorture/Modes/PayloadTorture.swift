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

    static func killCycle(
        _ cycle: Int, server: ReferenceServer, executable: String, root: FilePath, options: TortureOptions,
        report: inout TortureReport
    ) async -> Bool {
        func violation(_ detail: String) -> Bool {
            report.violation(.payload, seed: options.seed, cycle: cycle, detail)
            return false
        }
        var random = SplitMix64.derived(seed: options.seed, stream: 0x5041_594B_0000_0000 | UInt64(cycle))
        let directory = root.appending("cycle-\(cycle)")
        do { try await Blocking.freshDirectory(directory.string) } catch { return violation("cannot prepare \(directory): \(error)") }
        let count = 2 + random.next(below: 5)
        var job = PayloadWorker.Job(root: directory, baseURL: server.baseURL, seed: options.seed, cycle: cycle, count: count)
        job.encrypted = options.encrypted || (cycle / 2) % 2 == 1
        let point = killPoints[(cycle / 2) % killPoints.count]
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
        let rejectedBefore = server.ledger.rejected
        var lives = 0
        var drained = false
        var killed = false
        while !drained {
            var arguments = job.arguments
            if lives > 0 {
                var calm = job
                calm.killAt = nil
                arguments = calm.arguments
            }
            let outcome: ChildSupervisor.Outcome
            do {
                outcome = try await ChildSupervisor.run(
                    executable, arguments, errorFile: directory.string + ".stderr", policy: lives == 0 ? policy : .never)
            } catch {
                return violation("cannot run the app: \(error)")
            }
            lives += 1
            for line in outcome.lines {
                switch WorkerLine(parsing: line) {
                case .ready, .enqueued: break
                case .drained: drained = true
                default: return violation("life \(lives) (\(point)): the app printed \"\(line)\"; stderr: \(outcome.errorTail)")
                }
            }
            if outcome.hung { return violation("life \(lives) (\(point)): the app did not drain its queue in time") }
            switch outcome.termination {
            case .signaled(let signal) where signal == SIGKILL:
                killed = true
                report.count(.payload) { $0.faults += 1 }
                report.detail(.payload, "apps killed at \(point)")
            case .exited(0) where drained: break
            default:
                return violation("life \(lives) (\(point)): the app \(outcome.termination); stderr: \(outcome.errorTail)")
            }
            if lives > 3 { return violation("the app was not drained after \(lives) lives") }
        }
        if !killed { report.detail(.payload, "kill point not reached (\(point))") }
        report.count(.payload) { $0.acknowledged += count + 1 }

        // The server's side: each upload applied once, with its own bytes.
        let ledger = server.ledger
        if ledger.rejected != rejectedBefore {
            return violation("the server refused \(ledger.rejected - rejectedBefore) upload(s): a body did not match its digest")
        }
        for index in 0...count {
            let id = PayloadWorker.id(seed: options.seed, cycle: cycle, index: index)
            let key = OutboxEntry.derivedIdempotencyKey(partition: PayloadWorker.partition, id: id)
            guard ledger.applied[key] == 1 else {
                return violation("entry \(index) (key \(key)) was applied \(ledger.applied[key] ?? 0) times")
            }
        }
        // The app's side: nothing quarantined, no file left behind.
        do {
            let store = try await LogOutboxStore.open(
                root: directory, partition: PayloadWorker.partition, configuration: PayloadWorker.configuration(job))
            let summary = try await store.summary()
            let recovery = store.payloadRecovery
            try await store.close()
            if summary.total != 0 { return violation("\(summary.total) entries left after the drain: \(summary)") }
            if !recovery.removedOrphans.isEmpty {
                return violation("the drained queue's open found payload files to recover: \(recovery)")
            }
            let left = try await Blocking.run { try PayloadCorruption.payloadFiles(under: directory.string) }
            if !left.isEmpty { return violation("payload files left after every entry ended: \(left)") }
        } catch {
            return violation("cannot check the drained queue: \(error)")
        }
        if job.encrypted {
            let needles = (1...count).map { PayloadWorker.marker(seed: options.seed, cycle: cycle, index: $0) } + [PayloadWorker.partition]
            let path = directory.string
            do {
                if let leak = try await Blocking.run({ PlaintextScan.first(of: needles, under: path) }) {
                    return violation("encrypted store: \(leak)")
                }
            } catch {
                return violation("encrypted store: the leak scan failed: \(error)")
            }
        }
        report.count(.payload) {
            $0.cycles += 1
            $0.recovered += count + 1
        }
        await Blocking.remove(directory.string)
        return true
    }
}
