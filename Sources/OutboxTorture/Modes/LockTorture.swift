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
        func violation(_ detail: String) -> Bool {
            report.violation(.lock, seed: seed, cycle: cycle, detail)
            return false
        }
        let holder: OutboxLog
        do {
            holder = try await OutboxLog.open(at: directory, configuration: TortureLogConfiguration.make())
        } catch {
            return violation("the holder could not open the log: \(error)")
        }

        // In-process intruders, racing the holder's appends.
        let intrusions = (0...random.next(below: 4)).map { _ in Intrusion.allCases[random.next(below: Intrusion.allCases.count)] }
        let appends = 1 + random.next(below: 20)
        let keys = (0..<appends).map { LogKey("lock-\(cycle)-\($0)") }
        let failures = await withTaskGroup(of: String?.self) { group in
            group.addTask {
                do {
                    for key in keys { try await holder.put(key, Array(key.description.utf8), durability: .written) }
                    return nil
                } catch {
                    return "the holder's append failed while others tried to open the log: \(error)"
                }
            }
            for intrusion in intrusions {
                group.addTask { await refusal(of: intrusion, at: directory) }
            }
            return await group.reduce(into: [String]()) { if let failure = $1 { $0.append(failure) } }
        }
        if let failure = failures.first {
            try? await holder.close()
            return violation("\(intrusions.map(\.rawValue)): \(failure)")
        }
        report.count(.lock) {
            $0.acknowledged += appends
            $0.faults += intrusions.count
        }
        for intrusion in intrusions { report.detail(.lock, "refused in this process: \(intrusion.rawValue)") }

        // Another process tries to take the log, reading or writing.
        let readOnly = ["log", "verify", directory.string]
        func writer(_ prefix: String) -> [String] {
            ["log", "append", directory.string, "--count", "1", "--size", "8", "--durability", "durable", "--key-prefix", prefix]
        }
        let intruder = "intruder-\(cycle)-"
        for arguments in random.nextBool() ? [readOnly, writer(intruder)] : [random.nextBool() ? readOnly : writer(intruder)] {
            let outcome: ChildSupervisor.Outcome
            do {
                outcome = try await ChildSupervisor.run(executable, arguments, errorFile: errorFile, policy: .limited)
            } catch {
                try? await holder.close()
                return violation("cannot run `outbox \(arguments[0]) \(arguments[1])`: \(error)")
            }
            guard outcome.termination == .exited(2), outcome.errorTail.contains("locked") else {
                try? await holder.close()
                return violation(
                    "after \(intrusions.count) refused open(s) in this process (\(intrusions.map(\.rawValue))), "
                        + "another process's `outbox \(arguments[0]) \(arguments[1])` \(outcome.termination) while the log was held: "
                        + (outcome.lines + [outcome.errorTail]).joined(separator: " | "))
            }
            report.count(.lock) { $0.faults += 1 }
            report.detail(.lock, "refused in another process: \(arguments[1])")
        }

        // The holder lost nothing and no intruder wrote anything.
        do {
            for key in keys where try await holder.get(key)?.value != Array(key.description.utf8) {
                try? await holder.close()
                return violation("the holder's \(key) was lost while others tried to open the log")
            }
            if holder.keys.contains(where: { $0.description.hasPrefix(intruder) }) {
                try? await holder.close()
                return violation("an intruder's record is in the holder's log")
            }
            try await holder.close()
        } catch {
            return violation("the holder failed after the intrusions: \(error)")
        }
        report.count(.lock) { $0.recovered += keys.count }

        // Released: free again, for another process or this one.
        if random.nextBool() {
            guard
                let outcome = try? await ChildSupervisor.run(
                    executable, writer("after-close-\(cycle)-"), errorFile: errorFile, policy: .limited),
                outcome.termination == .exited(0)
            else {
                return violation("once the holder closed, another process still could not open the log")
            }
            report.detail(.lock, "taken by another process after the close")
        } else {
            do {
                let again = try await OutboxLog.open(at: directory, configuration: TortureLogConfiguration.make())
                try await again.close()
            } catch {
                return violation("once the holder closed, this process could not open the log again: \(error)")
            }
            report.detail(.lock, "reopened in this process after the close")
        }
        report.count(.lock) { $0.cycles += 1 }
        return true
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
