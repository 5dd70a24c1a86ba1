import OutboxLog
import OutboxLogTesting

/// One I/O-fault cycle, step by step: a warm-up without faults, the
/// workload with a fault armed, the check of the step it failed, the app's
/// or the machine's death, maybe a recovery that meets a fault of its own,
/// and the recovery held to the oracle.
extension IOFaultTorture {
    /// The workload's run under its fault: what the rest of the cycle checks.
    struct WorkloadRun {
        let log: OutboxLog
        let wrapper: CrashingFileSystem
        let plan: IOFaultPlan
        let operations: [TortureOperation]
        let oracle: PrefixOracle
        var acknowledged = 0
        var failure: (step: Int, error: OutboxLogError)?
        /// The fault and what came of it, for a violation's text.
        var context = ""
    }

    /// One cycle; returns its simulated disk (kept when it found a violation).
    @discardableResult
    static func cycle(seed: UInt64, cycle: Int, report: inout TortureReport) async -> SimulatedFileSystem {
        var random = SplitMix64.derived(seed: seed, stream: 0x494F_0000_0000_0000 | UInt64(cycle))
        let (driver, disk) = TortureCycle.onSimulatedDisk(.iofault, seed: seed, cycle: cycle)
        _ = await driver.run(report: &report) { (report: inout TortureReport) async throws(CycleViolation) in
            let start = try await warmUp(seed: seed, cycle: cycle, on: disk, &random)
            let run = try await runWorkload(seed: seed, cycle: cycle, after: start, on: disk, &random, report: &report)
            try await checkFailedStep(run, on: disk, report: &report)
            var (expectation, death) = die(run, on: disk, &random, report: &report)
            if random.nextBool() {
                try await recoverUnderFault(run, &expectation, &death, on: disk, &random, report: &report)
            }
            _ = try await driver.reopenAndCount(
                directory, fileSystem: disk, oracle: run.oracle, expecting: expectation, context: "\(run.context), then \(death)",
                report: &report)
        }
        return disk
    }

    /// A log with some history, written without faults: sealed segments,
    /// annotations, tombstones. Returns its state.
    static func warmUp(
        seed: UInt64, cycle: Int, on disk: SimulatedFileSystem, _ random: inout SplitMix64
    ) async throws(CycleViolation) -> StateModel {
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
            throw CycleViolation("the warm-up without faults failed: \(error)")
        }
        return start
    }

    /// Opens the log, arms a fault and runs the workload until a step fails.
    static func runWorkload(
        seed: UInt64, cycle: Int, after start: StateModel, on disk: SimulatedFileSystem, _ random: inout SplitMix64,
        report: inout TortureReport
    ) async throws(CycleViolation) -> WorkloadRun {
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
            throw CycleViolation("the open before the workload failed: \(error)")
        }
        await log.waitForBackgroundCompaction()
        var run = WorkloadRun(
            log: log, wrapper: wrapper, plan: plan, operations: operations, oracle: PrefixOracle(start: start, operations: operations))
        disk.faults.install(plan.rule)
        for (index, operation) in operations.enumerated() {
            do {
                try await OperationRunner.runSettled(operation, on: log)
                run.acknowledged += 1
            } catch {
                run.failure = (index, error)
                break
            }
        }
        recordWorkload(&run, preallocated: preallocated, on: disk, report: &report)
        return run
    }

    /// Counts the workload's acknowledgements and names its fault.
    static func recordWorkload(
        _ run: inout WorkloadRun, preallocated: Bool, on disk: SimulatedFileSystem, report: inout TortureReport
    ) {
        report.count(.iofault) { [acknowledged = run.acknowledged] in $0.acknowledged += acknowledged }
        let injected = disk.faults.injectedFaults.prefix(3).map(\.description).joined(separator: "; ")
        run.context = "\(run.plan), \(run.acknowledged) acknowledged" + (injected.isEmpty ? ", no fault fired" : " (\(injected))")
        if preallocated {
            report.detail(.iofault, "cycles with preallocated segments")
            if run.failure == nil, run.plan.target == .write, !disk.faults.injectedFaults.isEmpty {
                // A zero-fill ahead that fails lets the appends go on.
                report.detail(.iofault, "write faults that failed no step (a zero-fill ahead, or a background compaction)")
            }
        }
    }

    /// The step that failed failed with an I/O error, and left the log
    /// poisoned, or (a compaction that failed before its swap) whole.
    static func checkFailedStep(
        _ run: WorkloadRun, on disk: SimulatedFileSystem, report: inout TortureReport
    ) async throws(CycleViolation) {
        guard let (step, error) = run.failure else { return }
        report.detail(.iofault, "steps failed")
        if error.code != .io && error.code != .poisoned {
            throw CycleViolation(
                "\(run.context): step \(step) (\(run.operations[step])) failed with \(error.code), expected an I/O error: \(error)")
        }
        if run.operations[step] == .compact && !isPoisoned(run.log) {
            try await checkWholeAfterFailedCompaction(run, step: step, on: disk)
            report.detail(.iofault, "failed compactions survived in place")
        } else if let problem = await poisoningProblem(run.log, after: run.operations[step]) {
            throw CycleViolation("\(run.context): \(problem)")
        } else {
            report.detail(.iofault, "poisoned logs refused appends, syncs and reads")
        }
    }

    /// A compaction that failed before its swap must leave the log whole.
    static func checkWholeAfterFailedCompaction(
        _ run: WorkloadRun, step: Int, on disk: SimulatedFileSystem
    ) async throws(CycleViolation) {
        disk.faults.removeAllRules()
        let expected = run.oracle.states[step]
        do {
            // Writes what is buffered first (a roll it finishes may
            // start a compaction: let it end), so the reads that
            // follow do not race the writer or a compaction.
            try await run.log.flush()
            await run.log.waitForBackgroundCompaction()
            let reading = try await LogContents.read(run.log)
            if reading.state != expected || !reading.problems.isEmpty {
                throw CycleViolation(
                    "\(run.context): after a failed compaction the open log no longer holds what was acknowledged: "
                        + (reading.problems.first ?? "keys differ: \(reading.state.differences(from: expected).prefix(4))"))
            }
        } catch let violation as CycleViolation {
            throw violation
        } catch {
            throw CycleViolation("\(run.context): reading after a failed compaction failed: \(error)")
        }
    }

    /// Then the app dies (written acknowledgements survive) or the machine
    /// does (durable ones). Returns what the recovery must find, and the death.
    static func die(
        _ run: WorkloadRun, on disk: SimulatedFileSystem, _ random: inout SplitMix64, report: inout TortureReport
    ) -> (RecoveryCheck.Expectation, String) {
        run.wrapper.crash()
        report.count(.iofault) { $0.faults += disk.faults.injectedFaults.count }
        disk.faults.removeAllRules()
        let powerLoss = random.nextBool()
        if powerLoss {
            disk.simulatePowerLoss(PowerLossMode.allCases[random.next(below: PowerLossMode.allCases.count)], seed: random.next())
        } else {
            disk.simulateProcessCrash()
        }
        withExtendedLifetime(run.log) {}
        let expectation = RecoveryCheck.Expectation.crash(
            acknowledged: run.acknowledged, inFlight: run.failure == nil ? 0 : 1, keeping: powerLoss ? .durable : .written)
        return (expectation, powerLoss ? "power loss" : "app kill")
    }

    /// The first recovery meets a fault of its own: it must fail with `.io`
    /// or recover correctly. Then its process dies too; maybe the machine.
    static func recoverUnderFault(
        _ run: WorkloadRun, _ expectation: inout RecoveryCheck.Expectation, _ death: inout String, on disk: SimulatedFileSystem,
        _ random: inout SplitMix64, report: inout TortureReport
    ) async throws(CycleViolation) {
        let recoveryPlan = IOFaultPlan.drawForRecovery(&random)
        let injectedBefore = disk.faults.injectedFaults.count
        disk.faults.install(recoveryPlan.rule)
        let outcome = await faultyRecovery(disk, oracle: run.oracle, expecting: expectation)
        report.count(.iofault) { $0.faults += disk.faults.injectedFaults.count - injectedBefore }
        switch outcome {
        case .failedAsExpected:
            report.detail(.iofault, "faulty recoveries refused with .io")
        case .recovered:
            report.detail(.iofault, "faulty recoveries that succeeded correctly")
        case .violation(let detail):
            throw CycleViolation("\(run.context), \(death), then \(recoveryPlan) during recovery: \(detail)")
        }
        disk.simulateProcessCrash()
        if random.nextBool() {
            disk.simulatePowerLoss(.dropUnsynced)
            // Now only the durable promises hold: what the workload left
            // `written` was never synced by a recovery that failed.
            expectation = .crash(acknowledged: run.acknowledged, inFlight: run.failure == nil ? 0 : 1, keeping: .durable)
            death += " and, after the faulty recovery, a power loss"
        }
    }
}
