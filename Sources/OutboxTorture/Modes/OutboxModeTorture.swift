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
        func violation(_ detail: String) -> Bool {
            report.violation(.outbox, seed: options.seed, cycle: cycle, detail)
            return false
        }
        var random = SplitMix64.derived(seed: options.seed, stream: 0x4F55_5442_0000_0000 | UInt64(cycle))
        let directory = root.appending("cycle-\(cycle)")
        do { try await Blocking.freshDirectory(directory.string) } catch { return violation("cannot prepare \(directory): \(error)") }
        let count = 12 + random.next(below: 30)
        var job = OutboxWorker.Job(root: directory, baseURL: server.baseURL, seed: options.seed, cycle: cycle, count: count)
        job.encrypted = options.encrypted
        let arguments = OutboxWorkerArguments.make(job)
        let faultsBefore = server.ledger.faults.values.reduce(0, +)

        var acknowledgedKeys: [Int: String] = [:]  // entry index → key the app was given
        var mintedKeys: [String: String] = [:]  // minted write's name → key the app was given
        var lives = 0
        var drained = false
        let kills = random.next(below: 10) < 3 ? 2 : 1
        while !drained {
            let policy: ChildSupervisor.KillPolicy
            var plan = "no kill"
            if lives < kills {
                (policy, plan) = killPolicy(count: count, server: server, &random)
            } else {
                policy = .never
            }
            let outcome: ChildSupervisor.Outcome
            do {
                outcome = try await ChildSupervisor.run(
                    executable, arguments, errorFile: directory.string + ".stderr", policy: policy)
            } catch {
                return violation("cannot run the app: \(error)")
            }
            lives += 1
            for line in outcome.lines {
                switch WorkerLine(parsing: line) {
                case .ready: break
                case .enqueued(let name, let key) where name.hasPrefix("m"):
                    guard mintedKeys.updateValue(key, forKey: name) == nil else {
                        return violation("life \(lives): the minted write \(name) was acknowledged twice")
                    }
                case .enqueued(let index, let key):
                    guard let index = Int(index) else { return violation("life \(lives): bad line \"\(line)\"") }
                    if key == "-" { continue }  // a duplicate: recorded in an earlier life
                    if let earlier = acknowledgedKeys[index], earlier != key {
                        return violation("life \(lives): entry \(index) was enqueued twice, with keys \(earlier) and \(key)")
                    }
                    acknowledgedKeys[index] = key
                case .drained: drained = true
                default:
                    return violation("life \(lives) (\(plan)): the app printed \"\(line)\"; stderr: \(outcome.errorTail)")
                }
            }
            if outcome.hung { return violation("life \(lives): the app did not drain its queue in time") }
            switch outcome.termination {
            case .signaled(let signal) where signal == SIGKILL && outcome.killed:
                report.count(.outbox) { $0.faults += 1 }
                report.detail(.outbox, "apps killed")
            case .exited(0) where drained:
                break
            default:
                return violation("life \(lives) (\(plan)): the app \(outcome.termination) on its own; stderr: \(outcome.errorTail)")
            }
            if lives > kills + 1 { return violation("the app was not drained after \(lives) lives") }
        }
        report.count(.outbox) { $0.acknowledged += acknowledgedKeys.count }
        report.count(.outbox) { $0.faults += server.ledger.faults.values.reduce(0, +) - faultsBefore }

        // The server's side of the story.
        let ledger = server.ledger
        let attempts = server.attempts
        for index in 0..<count {
            let tag = OutboxWorker.tag(seed: options.seed, cycle: cycle, index: index)
            let keys = attempts.keys(forRequestsContaining: "\"text\":\"\(tag)\"")
            guard !keys.isEmpty else { return violation("entry \(index) (\(tag)) never reached the server") }
            guard keys.count == 1, let key = keys.keys.first, !key.isEmpty else {
                return violation("entry \(index) (\(tag)) was sent with \(keys.count) different keys: \(keys.sorted { $0.key < $1.key })")
            }
            if let acknowledged = acknowledgedKeys[index], acknowledged != key {
                return violation("entry \(index) was acknowledged with key \(acknowledged) but sent with \(key)")
            }
            let applied = ledger.applied[key] ?? 0
            guard applied == 1 else {
                return violation("entry \(index) (key \(key)) was applied \(applied) times (attempts: \(keys[key]!))")
            }
            if keys[key]! > 1 { report.detail(.outbox, "writes retried with their key") }
        }
        if let detail = mintedViolation(mintedKeys, seed: options.seed, cycle: cycle, server: server) {
            return violation(detail)
        }
        report.detail(.outbox, "writes with minted ids acknowledged", mintedKeys.count)
        if ledger.appliedWithoutKey > 0 { return violation("\(ledger.appliedWithoutKey) write(s) applied without a key") }
        if options.encrypted {
            // After every kill and recovery, nothing the app wrote is readable.
            let needles = ["torture-\(options.seed)-\(cycle)-", "conversation-", "torture_message", "/messages", OutboxWorker.partition]
            let path = directory.string
            do {
                if let leak = try await Blocking.run({ PlaintextScan.first(of: needles, under: path) }) {
                    return violation("encrypted store: \(leak)")
                }
            } catch {
                return violation("encrypted store: the leak scan failed: \(error)")
            }
            report.detail(.outbox, "encrypted cycles with no plaintext on disk")
        }
        report.count(.outbox) {
            $0.cycles += 1
            $0.recovered += count
        }
        await Blocking.remove(directory.string)
        return true
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
