import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// I/O errors through the simulated file system.
///
/// Each cycle fails one kind of system call (EIO or ENOSPC on the Nth
/// write, sync, rename, directory sync, file creation or removal; once or
/// from then on) under a running workload, then checks that:
/// - after a failed append, the log is poisoned: appends, syncs and reads
///   throw `.poisoned` (a failed sync is never retried: fsyncgate);
/// - after a failed compaction that did not poison it, the log still holds
///   exactly what was acknowledged;
/// - nothing was acknowledged that had not reached the disk: after an app
///   kill every `written` acknowledgement survives, after a power loss
///   every `durable` one (the simulated disk drops what a failed sync did
///   not flush, as Linux does);
/// and, in half the cycles, fails a call of the *recovery* too (truncate,
/// sync, rename, removal, read…): that open must fail with `.io` (an I/O
/// error is never reported as corruption) or succeed with the right state,
/// and a later open without faults must recover everything acknowledged.
enum IOFaultTorture {
    static let directory: FilePath = "/torture/log"

    /// One cycle in this many runs the real binary under libfiu instead.
    static let libfiuEvery = 8

    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        var libfiu = prepareLibfiu(options: options, report: &report)
        for cycle in budget.cycles {
            if cycle % libfiuEvery == libfiuEvery - 1, libfiu != nil {
                if await !libfiu!.cycle(seed: options.seed, cycleNumber: cycle, report: &report) { libfiu = nil }
                continue
            }
            let before = report[.iofault].violations
            let disk = await self.cycle(seed: options.seed, cycle: cycle, report: &report)
            if options.cycles.map({ $0 <= 10 }) == true {
                options.progress("iofault: cycle \(cycle): \(ScheduleFingerprint.text(disk))")
            }
            if report[.iofault].violations > before {
                let kept = await DiskImage.save(disk, to: options.directory.appending("iofault-cycle-\(cycle)"))
                report.notes.append("iofault: the simulated disk of cycle \(cycle) is kept in \(kept)")
            }
            if cycle % 100 == 0 {
                let counts = report[.iofault]
                options.progress("iofault: cycle \(cycle), \(counts.faults) faults, \(counts.violations) violations")
            }
        }
    }

    /// The libfiu runs, if `fiu-run` and the worker binary are at hand.
    static func prepareLibfiu(options: TortureOptions, report: inout TortureReport) -> LibfiuTorture? {
        guard options.libfiu else { return nil }
        guard let executable = options.workerExecutable else {
            report.notes.append("iofault: libfiu runs skipped: no worker executable (the `outbox` binary) was given")
            return nil
        }
        guard let fiuRun = LibfiuTorture.fiuRun else {
            report.notes.append("iofault: libfiu runs skipped: fiu-run not found (apt-get install fiu-utils)")
            return nil
        }
        return LibfiuTorture(executable: executable, fiuRun: fiuRun, root: options.directory.appending("libfiu"))
    }

    /// One cycle; returns its simulated disk (kept when it found a violation).
    @discardableResult
    static func cycle(seed: UInt64, cycle: Int, report: inout TortureReport) async -> SimulatedFileSystem {
        var random = SplitMix64.derived(seed: seed, stream: 0x494F_0000_0000_0000 | UInt64(cycle))
        let disk = SimulatedFileSystem(directories: ["/torture"])
        func violation(_ detail: String) {
            report.violation(.iofault, seed: seed, cycle: cycle, detail + " [\(ScheduleFingerprint.text(disk))]")
        }

        // A log with some history: sealed segments, annotations, tombstones.
        let warmup = TortureWorkload(seed: seed, stream: 0x494F_0000_0000 | UInt64(cycle) << 4, count: random.next(below: 150))
            .operations()
        var start = StateModel()
        do {
            let log = try await OutboxLog.open(
                at: directory, configuration: TortureLogConfiguration.make(fileSystem: disk, deterministic: true))
            await log.waitForBackgroundCompaction()
            for operation in warmup {
                try await OperationRunner.runSettled(operation, on: log)
                start.apply(operation)
            }
            try await log.close()
        } catch {
            violation("the warm-up without faults failed: \(error)")
            return disk
        }

        // The workload, with a fault armed.
        let operations = TortureWorkload(seed: seed, stream: 0x494F_0000_0000 | UInt64(cycle) << 4 | 1, count: 150)
            .operations()
        let preallocated =
            TortureLogConfiguration.simulatedModesPreallocate && TortureLogConfiguration.preallocates(cycle: cycle)
        let plan = IOFaultPlan.drawForWorkload(&random, preallocated: preallocated)
        let wrapper = CrashingFileSystem(base: disk, crashAt: nil)
        let log: OutboxLog
        do {
            log = try await OutboxLog.open(
                at: directory,
                configuration: TortureLogConfiguration.make(fileSystem: wrapper, deterministic: true, preallocated: preallocated))
        } catch {
            violation("the open before the workload failed: \(error)")
            return disk
        }
        await log.waitForBackgroundCompaction()
        let oracle = PrefixOracle(start: start, operations: operations)
        disk.faults.install(plan.rule)
        var acknowledged = 0
        var failure: (step: Int, error: OutboxLogError)?
        for (index, operation) in operations.enumerated() {
            do {
                try await OperationRunner.runSettled(operation, on: log)
                acknowledged += 1
            } catch {
                failure = (index, error)
                break
            }
        }
        report.count(.iofault) { $0.acknowledged += acknowledged }
        let injected = disk.faults.injectedFaults.prefix(3).map(\.description).joined(separator: "; ")
        let context = "\(plan), \(acknowledged) acknowledged" + (injected.isEmpty ? ", no fault fired" : " (\(injected))")
        if preallocated {
            report.detail(.iofault, "cycles with preallocated segments")
            if failure == nil, plan.target == .write, !disk.faults.injectedFaults.isEmpty {
                // A zero-fill ahead that fails lets the appends go on.
                report.detail(.iofault, "write faults that failed no step (a zero-fill ahead, or a background compaction)")
            }
        }
        if let (step, error) = failure {
            report.detail(.iofault, "steps failed")
            if error.code != .io && error.code != .poisoned {
                violation("\(context): step \(step) (\(operations[step])) failed with \(error.code), expected an I/O error: \(error)")
                return disk
            }
            if operations[step] == .compact && !isPoisoned(log) {
                // A compaction that failed before its swap must leave the log whole.
                disk.faults.removeAllRules()
                do {
                    // Writes what is buffered first (a roll it finishes may
                    // start a compaction: let it end), so the reads that
                    // follow do not race the writer or a compaction.
                    try await log.flush()
                    await log.waitForBackgroundCompaction()
                    let reading = try await LogContents.read(log)
                    if reading.state != oracle.states[step] || !reading.problems.isEmpty {
                        violation("\(context): after a failed compaction the open log no longer holds what was acknowledged: "
                            + (reading.problems.first ?? "keys differ: \(reading.state.differences(from: oracle.states[step]).prefix(4))"))
                        return disk
                    }
                    report.detail(.iofault, "failed compactions survived in place")
                } catch {
                    violation("\(context): reading after a failed compaction failed: \(error)")
                    return disk
                }
            } else if let problem = await poisoningProblem(log, after: operations[step]) {
                violation("\(context): \(problem)")
                return disk
            } else {
                report.detail(.iofault, "poisoned logs refused appends, syncs and reads")
            }
        }

        // Then the app dies (written acknowledgements survive) or the machine does (durable ones).
        wrapper.crash()
        report.count(.iofault) { $0.faults += disk.faults.injectedFaults.count }
        disk.faults.removeAllRules()
        let powerLoss = random.nextBool()
        if powerLoss {
            disk.simulatePowerLoss(PowerLossMode.allCases[random.next(below: PowerLossMode.allCases.count)], seed: random.next())
        } else {
            disk.simulateProcessCrash()
        }
        withExtendedLifetime(log) {}
        var expectation = RecoveryCheck.Expectation.crash(
            acknowledged: acknowledged, inFlight: failure == nil ? 0 : 1, keeping: powerLoss ? .durable : .written)
        var death = powerLoss ? "power loss" : "app kill"

        // Half the time, the first recovery meets a fault of its own.
        if random.nextBool() {
            let recoveryPlan = IOFaultPlan.drawForRecovery(&random)
            let injectedBefore = disk.faults.injectedFaults.count
            disk.faults.install(recoveryPlan.rule)
            let outcome = await faultyRecovery(disk, oracle: oracle, expecting: expectation)
            report.count(.iofault) { $0.faults += disk.faults.injectedFaults.count - injectedBefore }
            switch outcome {
            case .failedAsExpected:
                report.detail(.iofault, "faulty recoveries refused with .io")
            case .recovered:
                report.detail(.iofault, "faulty recoveries that succeeded correctly")
            case .violation(let detail):
                violation("\(context), \(death), then \(recoveryPlan) during recovery: \(detail)")
                return disk
            }
            // The failed recovery's process dies too; maybe the machine.
            disk.simulateProcessCrash()
            if random.nextBool() {
                disk.simulatePowerLoss(.dropUnsynced)
                // Now only the durable promises hold: what the workload left
                // `written` was never synced by a recovery that failed.
                expectation = .crash(acknowledged: acknowledged, inFlight: failure == nil ? 0 : 1, keeping: .durable)
                death += " and, after the faulty recovery, a power loss"
            }
        }

        switch await RecoveryCheck.reopen(directory, fileSystem: disk, oracle: oracle, expecting: expectation) {
        case .success(let passed):
            report.count(.iofault) {
                $0.cycles += 1
                $0.recovered += passed.state.entries.count
            }
        case .failure(let failure):
            violation("\(context), then \(death): \(failure)")
        }
        return disk
    }
}
