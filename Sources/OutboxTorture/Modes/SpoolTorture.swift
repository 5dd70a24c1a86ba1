import Foundation
import Outbox
import OutboxLocking
import OutboxLogTesting
import OutboxReferenceServer
import SystemPackage

/// The spool mode: several processes write into one queue while another
/// holds it and drains it, and any of them is killed at any moment.
///
/// Each cycle, two to four writer slots (``SpoolWriterSlot``) run real
/// `outbox enqueue` processes — spooled while the owner holds the queue,
/// direct while it is down; half the slots end with one run of several
/// batches through one spool writer, maybe killed mid-run — and an owner (`outbox torture-worker
/// spool-owner`, ``SpoolOwner``) holds the queue, moves the spools in and
/// drains to the reference server; it is SIGKILLed after a random life and
/// restarted after a random gap, until the writers are done and a last life
/// drains everything. Then:
/// - every acknowledged enqueue reached the server under exactly the key it
///   was acknowledged with, and was applied exactly once; no key twice;
/// - no spool is left.
enum SpoolTorture {
    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        guard let executable = options.workerExecutable else {
            report.notes.append("spool: skipped, no worker executable (the `outbox` binary) was given")
            return
        }
        let server: ReferenceServer
        do { server = try await OutboxModeTorture.startServer(faultRate: 0.2, seed: options.seed) } catch {
            report.notes.append("spool: skipped, the reference server did not start: \(error)")
            return
        }
        let root = options.directory.appending("spool")
        for cycle in budget.cycles {
            let ok = await self.cycle(cycle, server: server, executable: executable, root: root, options: options, report: &report)
            if !ok { break }
            if cycle % 5 == 0 {
                let counts = report[.spool]
                options.progress(
                    "spool: cycle \(cycle), \(counts.acknowledged) enqueues acknowledged, \(counts.faults) kills, "
                        + "\(counts.violations) violations")
            }
        }
        await server.stop()
        if report[.spool].violations == 0 { await Blocking.remove(root.string) }
    }

    /// One cycle; `false` after a violation.
    static func cycle(
        _ cycle: Int, server: ReferenceServer, executable: String, root: FilePath, options: TortureOptions,
        report: inout TortureReport
    ) async -> Bool {
        let directory = root.appending("cycle-\(cycle)")
        var random = SplitMix64.derived(seed: options.seed, stream: 0x5350_4F4C_0000_0000 | UInt64(cycle))
        return await TortureCycle(.spool, seed: options.seed, cycle: cycle).run(in: directory, report: &report) {
            (report: inout TortureReport) async throws(CycleViolation) in
            let keyFile = try options.encrypted ? writeKeyFile(for: directory, seed: options.seed) : nil
            var ownerArguments = ["torture-worker", "spool-owner", "--root", directory.string, "--base-url", server.baseURL.absoluteString]
            if let keyFile { ownerArguments += ["--key-file", keyFile] }
            let writers = 2 + random.next(below: 3)
            let slots = (0..<writers).map { writer in
                SpoolWriterSlot(
                    writer: writer, count: 6 + random.next(below: 10), root: directory, seed: options.seed, cycle: cycle,
                    keyFile: keyFile, executable: executable)
            }
            let (owner, results) = await runAll(slots, owner: ownerArguments, executable: executable, directory: directory, &random)
            let acknowledged = try record(owner, results, report: &report)
            try checkServer(acknowledged, server: server)
            try checkStreams(results.flatMap(\.streams), server: server)
            try checkNoSpoolLeft(in: directory)
            report.count(.spool) {
                $0.cycles += 1
                $0.recovered += acknowledged.count
            }
            await Blocking.remove(directory.string)
            if let keyFile { await Blocking.remove(keyFile) }
        }
    }

    /// The key an encrypted cycle's processes read: a file beside the cycle's directory.
    static func writeKeyFile(for directory: FilePath, seed: UInt64) throws(CycleViolation) -> String {
        let path = directory.string + ".key"
        let key = Data(OutboxWorker.encryptionKey(seed: seed))
        guard FileManager.default.createFile(atPath: path, contents: key, attributes: [.posixPermissions: 0o600]) else {
            throw CycleViolation("cannot write the key file \(path)")
        }
        return path
    }

    /// The writers, each in its slot, and the owner's lives, all at once.
    static func runAll(
        _ slots: [SpoolWriterSlot], owner ownerArguments: [String], executable: String, directory: FilePath,
        _ random: inout SplitMix64
    ) async -> (OwnerResult, [SpoolWriterSlot.Result]) {
        let writersDone = Locked(false)
        let ownerSeed = random.next()
        async let ownerResult = ownerLives(
            executable, ownerArguments, directory: directory, writersDone: writersDone, seed: ownerSeed)
        var results: [SpoolWriterSlot.Result] = []
        await withTaskGroup(of: SpoolWriterSlot.Result.self) { group in
            for slot in slots {
                let slotSeed = random.next()
                group.addTask { await slot.run(randomSeed: slotSeed) }
            }
            for await result in group { results.append(result) }
        }
        writersDone.withLock { $0 = true }
        return (await ownerResult, results)
    }

    /// Counts the kills and the paths of the enqueues; a violation any
    /// process found. Returns the acknowledged entries.
    static func record(
        _ owner: OwnerResult, _ results: [SpoolWriterSlot.Result], report: inout TortureReport
    ) throws(CycleViolation) -> [SpoolWriterSlot.Acknowledged] {
        report.count(.spool) { $0.faults += owner.kills + results.reduce(0) { $0 + $1.kills } }
        report.detail(.spool, "owners killed", owner.kills)
        report.detail(.spool, "writers killed", results.reduce(0) { $0 + $1.kills })
        for result in results {
            if let problem = result.violation { throw CycleViolation(problem) }
            for (path, count) in result.paths { report.detail(.spool, "enqueues \(path)", count) }
        }
        if let problem = owner.violation { throw CycleViolation(problem) }
        let acknowledged = results.flatMap(\.acknowledged)
        report.count(.spool) { $0.acknowledged += acknowledged.count }
        return acknowledged
    }

    /// Every acknowledged entry applied once, under its key; no key applied twice.
    static func checkServer(_ acknowledged: [SpoolWriterSlot.Acknowledged], server: ReferenceServer) throws(CycleViolation) {
        let ledger = server.ledger
        let attempts = server.attempts
        if let (key, count) = ledger.applied.first(where: { $0.value > 1 }) {
            throw CycleViolation("key \(key) was applied \(count) times")
        }
        for entry in acknowledged where !entry.sharesTag {
            let keys = attempts.keys(forRequestsContaining: "\"text\":\"\(entry.tag)\"")
            guard keys.count == 1, let key = keys.keys.first else {
                throw CycleViolation("entry \(entry.tag) (\(entry.path)) reached the server with \(keys.count) keys: \(keys)")
            }
            guard key == entry.key else {
                throw CycleViolation("entry \(entry.tag) was acknowledged with key \(entry.key) but sent with \(key)")
            }
            let applied = ledger.applied[key] ?? 0
            guard applied == 1 else { throw CycleViolation("entry \(entry.tag) (key \(key)) was applied \(applied) times") }
        }
        if ledger.appliedWithoutKey > 0 { throw CycleViolation("\(ledger.appliedWithoutKey) write(s) applied without a key") }
    }

    /// No spool left behind.
    static func checkNoSpoolLeft(in directory: FilePath) throws(CycleViolation) {
        let spools = directory.appending("spools")
        let left = (try? FileManager.default.subpathsOfDirectory(atPath: spools.string))?.filter {
            $0.split(separator: "/").last?.hasPrefix("spool+") == true
        } ?? []
        guard left.isEmpty else { throw CycleViolation("spools left after the last owner drained: \(left)") }
    }

    struct OwnerResult: Sendable {
        var kills = 0
        var violation: String?
    }

    /// The owner, killed after a random life and restarted after a random
    /// gap while the writers run; then one last life that drains everything.
    static func ownerLives(
        _ executable: String, _ arguments: [String], directory: FilePath, writersDone: Locked<Bool>, seed: UInt64
    ) async -> OwnerResult {
        var random = SplitMix64(seed: seed)
        var result = OwnerResult()
        let errorFile = directory.string + ".owner.stderr"
        while !writersDone.withLock({ $0 }) {
            var policy = ChildSupervisor.KillPolicy()
            policy.after = .milliseconds(Int64(100 + random.next(below: 1400)))
            let outcome: ChildSupervisor.Outcome
            do { outcome = try await ChildSupervisor.run(executable, arguments, errorFile: errorFile, policy: policy) } catch {
                result.violation = "cannot run the owner: \(error)"
                return result
            }
            guard case .signaled(let signal) = outcome.termination, signal == SIGKILL, outcome.killed else {
                result.violation = "the owner \(outcome.termination) on its own: \(outcome.lines); stderr: \(outcome.errorTail)"
                return result
            }
            result.kills += 1
            // Down for a while: writers write directly.
            try? await Task.sleep(for: .milliseconds(Int64(random.next(below: 300))))
        }
        // The owner's signal to drain and exit; without it the last owner waits.
        guard FileManager.default.createFile(atPath: SpoolOwner.doneFile(directory).string, contents: nil) else {
            result.violation = "cannot create \(SpoolOwner.doneFile(directory))"
            return result
        }
        let outcome: ChildSupervisor.Outcome
        do { outcome = try await ChildSupervisor.run(executable, arguments, errorFile: errorFile, policy: .never) } catch {
            result.violation = "cannot run the owner: \(error)"
            return result
        }
        guard case .exited(0) = outcome.termination, outcome.lines.last == "drained" else {
            result.violation = "the last owner \(outcome.termination): \(outcome.lines); stderr: \(outcome.errorTail)"
            return result
        }
        return result
    }
}
