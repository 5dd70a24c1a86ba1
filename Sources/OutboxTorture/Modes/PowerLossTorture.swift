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
        let disk = SimulatedFileSystem(directories: ["/torture"])
        var state = StateModel()
        for round in 0..<3 {
            let operations = TortureWorkload(
                seed: seed, stream: 0x5057_0000_0000 | UInt64(cycle) << 4 | UInt64(round),
                count: 30 + random.next(below: 250)
            ).operations()
            // Die mid-step at the Nth change to the disk, or between steps.
            let crashAtCall: Int? = random.nextBool() ? 1 + random.next(below: 300) : nil
            let lastStep = random.next(below: operations.count + 1)
            let mode = PowerLossMode.allCases[random.next(below: PowerLossMode.allCases.count)]
            let powerLossSeed = random.next()
            let context = "round \(round), \(mode), " + (crashAtCall.map { "dying at disk call \($0)" } ?? "dying after step \(lastStep)")

            let wrapper = CrashingFileSystem(base: disk, crashAt: crashAtCall)
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
                report.violation(
                    .powerloss, seed: seed, cycle: cycle,
                    "\(context): the open before the workload failed: \(error) [\(ScheduleFingerprint.text(disk))]")
                return disk
            }
            if let log {
                for operation in operations[..<lastStep] {
                    issued += 1
                    do { try await OperationRunner.runSettled(operation, on: log) } catch { break }
                    acknowledged += 1
                }
            }
            // The machine dies: nothing more reaches the disk; then the
            // unsynced writes meet their fate.
            wrapper.crash()
            disk.simulatePowerLoss(mode, seed: powerLossSeed)
            withExtendedLifetime(log) {}
            report.count(.powerloss) {
                $0.faults += 1
                $0.acknowledged += acknowledged
            }
            report.detail(.powerloss, "power losses (\(mode))")
            if wrapper.hasCrashed && crashAtCall != nil && issued > acknowledged { report.detail(.powerloss, "died mid-step") }

            let oracle = PrefixOracle(start: state, operations: operations)
            let expectation = RecoveryCheck.Expectation.crash(
                acknowledged: acknowledged, inFlight: issued - acknowledged, keeping: .durable)
            switch await RecoveryCheck.reopen(directory, fileSystem: disk, oracle: oracle, expecting: expectation) {
            case .success(let passed):
                state = passed.state
                report.count(.powerloss) { $0.recovered += passed.state.entries.count }
                if passed.recovery.truncatedTail != nil { report.detail(.powerloss, "torn tails cut") }
                if passed.recovery.interruptedCompaction != nil { report.detail(.powerloss, "interrupted compactions recovered") }
            case .failure(let failure):
                report.violation(
                    .powerloss, seed: seed, cycle: cycle,
                    "\(context), \(acknowledged) acknowledged: \(failure) [\(ScheduleFingerprint.text(disk))]")
                return disk
            }
        }
        report.count(.powerloss) { $0.cycles += 1 }
        return disk
    }
}
