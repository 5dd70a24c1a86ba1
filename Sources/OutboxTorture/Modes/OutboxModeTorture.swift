import Foundation
import IdempotencyKeyMiddleware
import Outbox
import OutboxLog
import OutboxLogTesting
import OutboxReferenceServer
import SystemPackage

/// The outbox mode: the app is killed while its dispatcher is mid-flight.
///
/// The parent runs the reference Idempotency-Key server in-process on
/// 127.0.0.1 (with faults: 503s, 429s, answers held past the client's
/// timeout, connections dropped after the write was applied), and spawns
/// an app process (`outbox torture-worker outbox`) that enqueues a list of
/// writes and drains them. It SIGKILLs the app mid-enqueue or mid-drain
/// (once or twice), restarts it until the queue is drained, and then
/// checks the server's records:
/// - every write was applied exactly once, under exactly one idempotency
///   key, which every attempt at that write carried;
/// - each acknowledged enqueue's key is that key;
/// - the writes with minted ids, enqueued first in each life (while a
///   store reopened from its checkpoint may still be loading): each
///   acknowledged one likewise, and none — acknowledged or cut off by the
///   kill — applied twice.
enum OutboxModeTorture {
    /// The client gives up on an answer after this long; the server holds
    /// some answers longer (after applying the write).
    static let clientTimeoutMilliseconds = 250

    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        guard let executable = options.workerExecutable else {
            report.notes.append("outbox: skipped, no worker executable (the `outbox` binary) was given")
            return
        }
        let server: ReferenceServer
        do {
            server = try await startServer(faultRate: 0.3, seed: options.seed)
        } catch {
            report.notes.append("outbox: skipped, the reference server did not start: \(error)")
            return
        }
        let root = options.directory.appending("outbox")
        for cycle in budget.cycles {
            let ok = await self.cycle(cycle, server: server, executable: executable, root: root, options: options, report: &report)
            if !ok { break }
            if cycle % 5 == 0 {
                let counts = report[.outbox]
                options.progress(
                    "outbox: cycle \(cycle), \(counts.details["apps killed"] ?? 0) apps killed, \(counts.recovered) writes delivered, "
                        + "\(counts.violations) violations")
            }
        }
        await server.stop()
        if report[.outbox].violations == 0 { await Blocking.remove(root.string) }
    }

    /// One app, killed and restarted until drained. Returns `false` after a violation.
    static func cycle(
        _ cycle: Int, server: ReferenceServer, executable: String, root: FilePath, options: TortureOptions,
        report: inout TortureReport
    ) async -> Bool {
        let directory = root.appending("cycle-\(cycle)")
        var random = SplitMix64.derived(seed: options.seed, stream: 0x4F55_5442_0000_0000 | UInt64(cycle))
        return await TortureCycle(.outbox, seed: options.seed, cycle: cycle).run(in: directory, report: &report) {
            (report: inout TortureReport) async throws(CycleViolation) in
            let count = 12 + random.next(below: 30)
            var job = OutboxWorker.Job(root: directory, baseURL: server.baseURL, seed: options.seed, cycle: cycle, count: count)
            job.encrypted = options.encrypted
            let faultsBefore = server.ledger.faults.values.reduce(0, +)
            let told = try await killUntilDrained(job, server: server, executable: executable, &random, report: &report)
            report.count(.outbox) { $0.acknowledged += told.acknowledged.count }
            report.detail(.outbox, "writes a reopened queue held, each explained by its state", told.explained)
            report.count(.outbox) { $0.faults += server.ledger.faults.values.reduce(0, +) - faultsBefore }
            try checkServer(job, told: told, server: server, report: &report)
            if options.encrypted {
                // After every kill and recovery, nothing the app wrote is readable.
                let needles = [
                    "torture-\(options.seed)-\(cycle)-", "conversation-", "torture_message", "/messages", OutboxWorker.partition,
                ]
                try await TortureCycle.checkNoPlaintext(needles, under: directory)
                report.detail(.outbox, "encrypted cycles with no plaintext on disk")
            }
            report.count(.outbox) {
                $0.cycles += 1
                $0.recovered += count
            }
            await Blocking.remove(directory.string)
        }
    }

    /// What the app's lives were told of their enqueues.
    struct Told {
        /// Entry index → the key the app was given.
        var acknowledged: [Int: String] = [:]
        /// Minted write's name → the key the app was given.
        var minted: [String: String] = [:]
        /// Writes a reopened queue held, each explained by its state (summed over lives).
        var explained = 0

        /// Takes an `enqueued` line of life `life`: each write acknowledged
        /// under one key only. `false` for any other line.
        mutating func take(_ line: WorkerLine, _ text: String, life: Int) throws(CycleViolation) -> Bool {
            switch line {
            case .enqueued(let name, let key) where name.hasPrefix("m"):
                guard minted.updateValue(key, forKey: name) == nil else {
                    throw CycleViolation("life \(life): the minted write \(name) was acknowledged twice")
                }
            case .explained(let count):
                explained += count
            case .enqueued(let index, let key):
                guard let index = Int(index) else { throw CycleViolation("life \(life): bad line \"\(text)\"") }
                if key == "-" { return true }  // a duplicate: recorded in an earlier life
                if let earlier = acknowledged[index], earlier != key {
                    throw CycleViolation("life \(life): entry \(index) was enqueued twice, with keys \(earlier) and \(key)")
                }
                acknowledged[index] = key
            default:
                return false
            }
            return true
        }
    }

    /// Runs the app, killing it once or twice, until it has drained its queue.
    static func killUntilDrained(
        _ job: OutboxWorker.Job, server: ReferenceServer, executable: String, _ random: inout SplitMix64,
        report: inout TortureReport
    ) async throws(CycleViolation) -> Told {
        let arguments = OutboxWorkerArguments.make(job)
        var told = Told()
        let kills = random.next(below: 10) < 3 ? 2 : 1
        var app = AppLives(executable: executable, errorFile: job.root.string + ".stderr", limit: kills + 1)
        while !app.drained {
            let policy: ChildSupervisor.KillPolicy
            var plan = "no kill"
            if app.lives < kills {
                (policy, plan) = killPolicy(count: job.count, server: server, &random)
            } else {
                policy = .never
            }
            let life = app.lives + 1
            let outcome = try await app.live(arguments, policy: policy, plan: plan) {
                (line: WorkerLine, text: String) throws(CycleViolation) -> Bool in try told.take(line, text, life: life)
            }
            if outcome.hung { throw CycleViolation("life \(app.lives): the app did not drain its queue in time") }
            switch app.ending(of: outcome, bySupervisor: true) {
            case .killed:
                report.count(.outbox) { $0.faults += 1 }
                report.detail(.outbox, "apps killed")
            case .drained:
                break
            case nil:
                throw CycleViolation(
                    "life \(app.lives) (\(plan)): the app \(outcome.termination) on its own; stderr: \(outcome.errorTail)")
            }
            try app.checkLimit()
        }
        return told
    }

    /// The server's side of the story: every write applied exactly once,
    /// under the one key every attempt carried and the app was told.
    static func checkServer(
        _ job: OutboxWorker.Job, told: Told, server: ReferenceServer, report: inout TortureReport
    ) throws(CycleViolation) {
        let ledger = server.ledger
        let attempts = server.attempts
        for index in 0..<job.count {
            let tag = OutboxWorker.tag(seed: job.seed, cycle: job.cycle, index: index)
            let keys = attempts.keys(forRequestsContaining: "\"text\":\"\(tag)\"")
            guard !keys.isEmpty else { throw CycleViolation("entry \(index) (\(tag)) never reached the server") }
            guard keys.count == 1, let key = keys.keys.first, !key.isEmpty else {
                throw CycleViolation(
                    "entry \(index) (\(tag)) was sent with \(keys.count) different keys: \(keys.sorted { $0.key < $1.key })")
            }
            if let acknowledged = told.acknowledged[index], acknowledged != key {
                throw CycleViolation("entry \(index) was acknowledged with key \(acknowledged) but sent with \(key)")
            }
            let applied = ledger.applied[key] ?? 0
            guard applied == 1 else {
                throw CycleViolation("entry \(index) (key \(key)) was applied \(applied) times (attempts: \(keys[key]!))")
            }
            if keys[key]! > 1 { report.detail(.outbox, "writes retried with their key") }
        }
        if let detail = mintedViolation(told.minted, seed: job.seed, cycle: job.cycle, server: server) {
            throw CycleViolation(detail)
        }
        report.detail(.outbox, "writes with minted ids acknowledged", told.minted.count)
        if ledger.appliedWithoutKey > 0 { throw CycleViolation("\(ledger.appliedWithoutKey) write(s) applied without a key") }
    }

    /// What is wrong with the writes with minted ids, if anything: each
    /// acknowledged one sent under its key only and applied once; none of
    /// them (some were cut off by a kill before their acknowledgement)
    /// applied twice.
    static func mintedViolation(_ acknowledged: [String: String], seed: UInt64, cycle: Int, server: ReferenceServer) -> String? {
        let ledger = server.ledger
        for (name, acknowledgedKey) in acknowledged.sorted(by: { $0.key < $1.key }) {
            let tag = OutboxWorker.tag(seed: seed, cycle: cycle, name: name)
            let keys = server.attempts.keys(forRequestsContaining: "\"text\":\"\(tag)\"")
            guard keys.count == 1, let key = keys.keys.first else {
                return "minted write \(name) was sent with \(keys.count) different keys (acknowledged with \(acknowledgedKey))"
            }
            guard key == acknowledgedKey else { return "minted write \(name) was acknowledged with key \(acknowledgedKey) but sent with \(key)" }
            let applied = ledger.applied[key] ?? 0
            guard applied == 1 else { return "minted write \(name) (key \(key)) was applied \(applied) times" }
        }
        let prefix = OutboxWorker.mintedTagPrefix(seed: seed, cycle: cycle)
        for key in server.attempts.keys(forRequestsContaining: "\"text\":\"\(prefix)").keys.sorted() {
            let applied = ledger.applied[key] ?? 0
            if applied > 1 { return "a minted write (key \(key)) was applied \(applied) times" }
        }
        return nil
    }

    /// The reference server, in this process (never killed: its keys may
    /// live in memory), with `faultRate` faults: 503s, 429s with
    /// `Retry-After: 0`, answers held past the client's timeout after the
    /// write was applied, slow answers, dropped connections.
    static func startServer(faultRate: Double, seed: UInt64) async throws -> ReferenceServer {
        var faults = ServerFaults.mixed(rate: faultRate, seed: seed)
        faults.retryAfterSeconds = 0
        faults.timeoutDelay = .milliseconds(clientTimeoutMilliseconds + 150)
        faults.slowDelay = .milliseconds(20)
        faults.slowApplyDelay = .milliseconds(clientTimeoutMilliseconds + 150)
        return try await ReferenceServer.start(faults: faults, keyStore: InMemoryIdempotencyKeyStore(), recordAttempts: true)
    }

    /// When to kill one life of the app: after some enqueues, after the
    /// server applied some writes (mid-drain), or after a random delay.
    static func killPolicy(
        count: Int, server: ReferenceServer, _ random: inout SplitMix64
    ) -> (ChildSupervisor.KillPolicy, String) {
        var policy = ChildSupervisor.KillPolicy()
        policy.hangLimit = .seconds(120)
        switch random.next(below: 3) {
        case 0:
            let target = random.next(below: count)
            let delay = UInt32(random.next(below: 20_000))
            policy.onLine = { line, _ in line.hasPrefix("enqueued \(target) ") ? delay : nil }
            return (policy, "kill \(delay) µs after enqueue \(target)")
        case 1:
            let baseline = server.ledger.applied.count
            let target = 1 + random.next(below: count)
            policy.when = { server.ledger.applied.count - baseline >= target }
            return (policy, "kill once the server applied \(target) write(s)")
        default:
            let delay = 20 + random.next(below: 400)
            policy.after = .milliseconds(delay)
            return (policy, "kill \(delay) ms after start")
        }
    }
}

/// The command line of an outbox worker: `outbox torture-worker outbox …`.
enum OutboxWorkerArguments {
    static func make(_ job: OutboxWorker.Job) -> [String] {
        [
            "torture-worker", "outbox", "--root", job.root.string, "--base-url", job.baseURL.absoluteString, "--seed",
            "\(job.seed)", "--cycle", "\(job.cycle)", "--count", "\(job.count)",
        ] + (job.encrypted ? ["--encrypted"] : [])
    }
}
