import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// One opener at a time, whoever asks: a log held open by this process
/// (appending all the while) is attacked by more opens *in this process* —
/// read-write, read-only, `destroy` — which must all be refused, and then
/// by another process (the `outbox` binary's `log verify` and `log append`),
/// which must be refused too: a refused attempt must never have released
/// the holder's lock (POSIX record locks belong to the process, and closing
/// any descriptor of the file drops them). Once the holder closes, the log
/// must be free again, for this process or another.
enum LockTorture {
    enum Intrusion: String, CaseIterable {
        case open, openReadOnly, destroy
    }

    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        guard let executable = options.workerExecutable else {
            report.notes.append("lock: skipped, no worker executable (the `outbox` binary) was given")
            return
        }
        let root = options.directory.appending("lock")
        do { try await Blocking.freshDirectory(root.string) } catch {
            report.notes.append("lock: cannot prepare \(root): \(error)")
            return
        }
        let before = report[.lock].violations
        for cycle in budget.cycles {
            let ok = await self.cycle(
                executable: executable, directory: root.appending("log"), errorFile: root.appending("child.stderr").string,
                seed: options.seed, cycle: cycle, report: &report)
            if !ok { break }
            if cycle % 25 == 0 {
                let counts = report[.lock]
                options.progress("lock: cycle \(cycle), \(counts.faults) intrusions refused, \(counts.violations) violations")
            }
        }
        if report[.lock].violations > before {
            report.notes.append("lock: the log of the failing cycle is kept in \(root)")
        } else {
            await Blocking.remove(root.string)
        }
    }

    /// One cycle; `false` after a violation.
    static func cycle(
        executable: String, directory: FilePath, errorFile: String, seed: UInt64, cycle: Int, report: inout TortureReport
    ) async -> Bool {
        var random = SplitMix64.derived(seed: seed, stream: 0x4C4F_434B_0000_0000 | UInt64(cycle))
        let intruders = Intruders(executable: executable, directory: directory, errorFile: errorFile, cycle: cycle)
        return await TortureCycle(.lock, seed: seed, cycle: cycle).run(report: &report) {
            (report: inout TortureReport) async throws(CycleViolation) in
            let holder: OutboxLog
            do {
                holder = try await OutboxLog.open(at: directory, configuration: TortureLogConfiguration.make())
            } catch {
                throw CycleViolation("the holder could not open the log: \(error)")
            }
            let (intrusions, keys) = try await intruders.inThisProcess(holding: holder, &random, report: &report)
            try await intruders.fromAnotherProcess(holding: holder, after: intrusions, &random, report: &report)
            try await intruders.checkHolder(holder, kept: keys)
            report.count(.lock) { $0.recovered += keys.count }
            try await intruders.checkReleased(&random, report: &report)
            report.count(.lock) { $0.cycles += 1 }
        }
    }

    /// The attacks of one cycle on the log `directory`, which a holder
    /// in this process keeps open.
    struct Intruders {
        let executable: String
        let directory: FilePath
        let errorFile: String
        let cycle: Int

        /// The prefix of the keys another process's writer would add.
        var intruder: String { "intruder-\(cycle)-" }

        /// `outbox log append` of one durable record, keys starting with `prefix`.
        func writer(_ prefix: String) -> [String] {
            ["log", "append", directory.string, "--count", "1", "--size", "8", "--durability", "durable", "--key-prefix", prefix]
        }

        /// Closes the holder, then fails the cycle.
        func abandon(_ holder: OutboxLog, _ detail: String) async -> CycleViolation {
            try? await holder.close()
            return CycleViolation(detail)
        }

        /// In-process intruders, racing the holder's appends: all refused.
        /// Returns the intrusions and the keys the holder appended.
        func inThisProcess(
            holding holder: OutboxLog, _ random: inout SplitMix64, report: inout TortureReport
        ) async throws(CycleViolation) -> ([Intrusion], [LogKey]) {
            let intrusions = (0...random.next(below: 4)).map { _ in Intrusion.allCases[random.next(below: Intrusion.allCases.count)] }
            let appends = 1 + random.next(below: 20)
            let keys = (0..<appends).map { LogKey("lock-\(cycle)-\($0)") }
            let failures = await withTaskGroup(of: String?.self) { [directory] group in
                group.addTask {
                    do {
                        for key in keys { try await holder.put(key, Array(key.description.utf8), durability: .written) }
                        return nil
                    } catch {
                        return "the holder's append failed while others tried to open the log: \(error)"
                    }
                }
                for intrusion in intrusions {
                    group.addTask { await LockTorture.refusal(of: intrusion, at: directory) }
                }
                return await group.reduce(into: [String]()) { if let failure = $1 { $0.append(failure) } }
            }
            if let failure = failures.first { throw await abandon(holder, "\(intrusions.map(\.rawValue)): \(failure)") }
            report.count(.lock) {
                $0.acknowledged += appends
                $0.faults += intrusions.count
            }
            for intrusion in intrusions { report.detail(.lock, "refused in this process: \(intrusion.rawValue)") }
            return (intrusions, keys)
        }

        /// Another process tries to take the log, reading or writing: refused.
        func fromAnotherProcess(
            holding holder: OutboxLog, after intrusions: [Intrusion], _ random: inout SplitMix64, report: inout TortureReport
        ) async throws(CycleViolation) {
            let readOnly = ["log", "verify", directory.string]
            for arguments in random.nextBool() ? [readOnly, writer(intruder)] : [random.nextBool() ? readOnly : writer(intruder)] {
                let outcome: ChildSupervisor.Outcome
                do {
                    outcome = try await ChildSupervisor.run(executable, arguments, errorFile: errorFile, policy: .limited)
                } catch {
                    throw await abandon(holder, "cannot run `outbox \(arguments[0]) \(arguments[1])`: \(error)")
                }
                guard outcome.termination == .exited(2), outcome.errorTail.contains("locked") else {
                    throw await abandon(
                        holder,
                        "after \(intrusions.count) refused open(s) in this process (\(intrusions.map(\.rawValue))), "
                            + "another process's `outbox \(arguments[0]) \(arguments[1])` \(outcome.termination) while the log was held: "
                            + (outcome.lines + [outcome.errorTail]).joined(separator: " | "))
                }
                report.count(.lock) { $0.faults += 1 }
                report.detail(.lock, "refused in another process: \(arguments[1])")
            }
        }

        /// The holder lost nothing and no intruder wrote anything; then it closes.
        func checkHolder(_ holder: OutboxLog, kept keys: [LogKey]) async throws(CycleViolation) {
            do {
                for key in keys where try await holder.get(key)?.value != Array(key.description.utf8) {
                    throw await abandon(holder, "the holder's \(key) was lost while others tried to open the log")
                }
                if holder.keys.contains(where: { $0.description.hasPrefix(intruder) }) {
                    throw await abandon(holder, "an intruder's record is in the holder's log")
                }
                try await holder.close()
            } catch let violation as CycleViolation {
                throw violation
            } catch {
                throw CycleViolation("the holder failed after the intrusions: \(error)")
            }
        }

        /// Released: free again, for another process or this one.
        func checkReleased(_ random: inout SplitMix64, report: inout TortureReport) async throws(CycleViolation) {
            if random.nextBool() {
                guard
                    let outcome = try? await ChildSupervisor.run(
                        executable, writer("after-close-\(cycle)-"), errorFile: errorFile, policy: .limited),
                    outcome.termination == .exited(0)
                else {
                    throw CycleViolation("once the holder closed, another process still could not open the log")
                }
                report.detail(.lock, "taken by another process after the close")
            } else {
                do {
                    let again = try await OutboxLog.open(at: directory, configuration: TortureLogConfiguration.make())
                    try await again.close()
                } catch {
                    throw CycleViolation("once the holder closed, this process could not open the log again: \(error)")
                }
                report.detail(.lock, "reopened in this process after the close")
            }
        }
    }

    /// Tries `intrusion` on the held log; a problem, or `nil` if it was
    /// refused with `.locked` as it must be.
    private static func refusal(of intrusion: Intrusion, at directory: FilePath) async -> String? {
        do {
            switch intrusion {
            case .open:
                let second = try await OutboxLog.open(at: directory, configuration: TortureLogConfiguration.make())
                try? await second.close()
            case .openReadOnly:
                var configuration = TortureLogConfiguration.make()
                configuration.readOnly = true
                let second = try await OutboxLog.open(at: directory, configuration: configuration)
                try? await second.close()
            case .destroy:
                try await OutboxLog.destroy(at: directory)
            }
            return "a second \(intrusion.rawValue) in this process succeeded while the log was open"
        } catch where error.code == .locked {
            return nil
        } catch {
            return "a second \(intrusion.rawValue) in this process failed with \(error.code), not .locked: \(error)"
        }
    }
}

extension ChildSupervisor.KillPolicy {
    /// Never killed, but a child that has not exited after a minute is.
    static var limited: Self {
        var policy = Self.never
        policy.hangLimit = .seconds(60)
        return policy
    }
}
