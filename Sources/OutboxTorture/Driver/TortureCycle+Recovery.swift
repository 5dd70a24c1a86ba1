import OutboxLog
import OutboxLogTesting
import SystemPackage

extension TortureCycle {
    /// A cycle of a simulated mode, on a fresh simulated disk whose
    /// schedule every violation names (a replay prints the same).
    static func onSimulatedDisk(_ mode: TortureMode, seed: UInt64, cycle: Int) -> (TortureCycle, SimulatedFileSystem) {
        let disk = SimulatedFileSystem(directories: ["/torture"])
        var driver = TortureCycle(mode, seed: seed, cycle: cycle)
        driver.annotate = { $0 + " [\(ScheduleFingerprint.text(disk))]" }
        return (driver, disk)
    }

    /// The last step of a crash (or of a round of one): reopens the log,
    /// holds it to the prefix oracle and, if it kept the promise, counts the
    /// records recovered and (if `completingCycle`) the cycle. A failure is
    /// a violation, after `context` (what the cycle did to the log).
    func reopenAndCount(
        _ directory: FilePath, fileSystem: any FileSystem = PosixFileSystem(), readOnly: Bool = false, oracle: PrefixOracle,
        expecting expectation: RecoveryCheck.Expectation, context: String, completingCycle: Bool = true,
        report: inout TortureReport
    ) async throws(CycleViolation) -> RecoveryCheck.Passed {
        switch await RecoveryCheck.reopen(directory, fileSystem: fileSystem, readOnly: readOnly, oracle: oracle, expecting: expectation) {
        case .success(let passed):
            report.count(mode) {
                if completingCycle { $0.cycles += 1 }
                $0.recovered += passed.state.entries.count
            }
            return passed
        case .failure(let failure):
            throw CycleViolation("\(context): \(failure)")
        }
    }
}
