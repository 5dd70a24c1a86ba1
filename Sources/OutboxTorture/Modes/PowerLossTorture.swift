import OutboxLog
import OutboxLogTesting
import SystemPackage

/// Power loss through the simulated file system: the machine dies between
/// two steps or in the middle of one (at a random file-system call: mid-roll,
/// mid-compaction, mid-sync), and its unsynced writes are dropped, kept in
/// part, torn, reordered or replaced by garbage (every ``PowerLossMode``).
/// The log must reopen (strict) as a prefix of its history holding every
/// `durable` acknowledgement. Three power losses per cycle, each round
/// continuing from what the last one recovered.
enum PowerLossTorture {
    static let directory: FilePath = "/torture/log"

    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        for cycle in budget.cycles {
            let before = report[.powerloss].violations
            let disk = await self.cycle(seed: options.seed, cycle: cycle, report: &report)
            if options.cycles.map({ $0 <= 10 }) == true {
                options.progress("powerloss: cycle \(cycle): \(ScheduleFingerprint.text(disk))")
            }
            if report[.powerloss].violations > before {
                let kept = await DiskImage.save(disk, to: options.directory.appending("powerloss-cycle-\(cycle)"))
                report.notes.append("powerloss: the simulated disk of cycle \(cycle) is kept in \(kept)")
            }
            if cycle % 100 == 0 {
                let counts = report[.powerloss]
                options.progress(
                    "powerloss: cycle \(cycle), \(counts.faults) power losses, \(counts.violations) violations")
            }
        }
    }

    /// One cycle; returns its simulated disk (kept when it found a violation).
    @discardableResult
    static func cycle(seed: UInt64, cycle: Int, report: inout TortureReport) async -> SimulatedFileSystem {
        var random = SplitMix64.derived(seed: seed, stream: 0x5057_0000_0000_0000 | UInt64(cycle))
        let (driver, disk) = TortureCycle.onSimulatedDisk(.powerloss, seed: seed, cycle: cycle)
        _ = await driver.run(report: &report) { (report: inout TortureReport) async throws(CycleViolation) in
            var state = StateModel()
            for round in 0..<3 {
                let plan = Round(seed: seed, cycle: cycle, round: round, &random)
                let (acknowledged, issued) = try await runUntilPowerLoss(plan, cycle: cycle, on: disk, report: &report)
                let oracle = PrefixOracle(start: state, operations: plan.operations)
                let expectation = RecoveryCheck.Expectation.crash(
                    acknowledged: acknowledged, inFlight: issued - acknowledged, keeping: .durable)
                let passed = try await driver.reopenAndCount(
                    directory, fileSystem: disk, oracle: oracle, expecting: expectation,
                    context: "\(plan.context), \(acknowledged) acknowledged", completingCycle: false, report: &report)
                state = passed.state
                if passed.recovery.truncatedTail != nil { report.detail(.powerloss, "torn tails cut") }
                if passed.recovery.interruptedCompaction != nil { report.detail(.powerloss, "interrupted compactions recovered") }
            }
            report.count(.powerloss) { $0.cycles += 1 }
        }
        return disk
    }

    /// One round's draws: its workload and how the machine dies.
    struct Round {
        let operations: [TortureOperation]
        /// Die mid-step at the Nth change to the disk, or between steps.
        let crashAtCall: Int?
        let lastStep: Int
        let mode: PowerLossMode
        let powerLossSeed: UInt64
        let context: String

        init(seed: UInt64, cycle: Int, round: Int, _ random: inout SplitMix64) {
            operations = TortureWorkload(
                seed: seed, stream: 0x5057_0000_0000 | UInt64(cycle) << 4 | UInt64(round),
                count: 30 + random.next(below: 250)
            ).operations()
            crashAtCall = random.nextBool() ? 1 + random.next(below: 300) : nil
            lastStep = random.next(below: operations.count + 1)
            mode = PowerLossMode.allCases[random.next(below: PowerLossMode.allCases.count)]
            powerLossSeed = random.next()
            context = "round \(round), \(mode), " + (crashAtCall.map { "dying at disk call \($0)" } ?? "dying after step \(lastStep)")
        }
    }

    /// Opens the log and runs the round's steps until the machine dies;
    /// returns the steps acknowledged and issued.
    static func runUntilPowerLoss(
        _ plan: Round, cycle: Int, on disk: SimulatedFileSystem, report: inout TortureReport
    ) async throws(CycleViolation) -> (acknowledged: Int, issued: Int) {
        let wrapper = CrashingFileSystem(base: disk, crashAt: plan.crashAtCall)
        var acknowledged = 0
        var issued = 0
        var log: OutboxLog?
        do {
            log = try await OutboxLog.open(
                at: directory,
                configuration: TortureLogConfiguration.make(
                    fileSystem: wrapper, deterministic: true,
                    preallocated: TortureLogConfiguration.simulatedModesPreallocate
                        && TortureLogConfiguration.preallocates(cycle: cycle)))
            await log?.waitForBackgroundCompaction()
        } catch where wrapper.hasCrashed {
            report.detail(.powerloss, "died during open")
        } catch {
            throw CycleViolation("\(plan.context): the open before the workload failed: \(error)")
        }
        if let log {
            for operation in plan.operations[..<plan.lastStep] {
                issued += 1
                do { try await OperationRunner.runSettled(operation, on: log) } catch { break }
                acknowledged += 1
            }
        }
        // The machine dies: nothing more reaches the disk; then the
        // unsynced writes meet their fate.
        wrapper.crash()
        disk.simulatePowerLoss(plan.mode, seed: plan.powerLossSeed)
        withExtendedLifetime(log) {}
        report.count(.powerloss) { [acknowledged] in
            $0.faults += 1
            $0.acknowledged += acknowledged
        }
        report.detail(.powerloss, "power losses (\(plan.mode))")
        if wrapper.hasCrashed && plan.crashAtCall != nil && issued > acknowledged { report.detail(.powerloss, "died mid-step") }
        return (acknowledged, issued)
    }
}
