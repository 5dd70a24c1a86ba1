import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Finishing a committed compaction renames its outputs into place, and
/// tolerates `ENOENT` because a crash may have renamed one already. An
/// `ENOENT` from a rename that did *not* happen (the torture suite's libfiu
/// runs inject any errno a rename can return) must not count as done: the
/// intent was then removed with an output still under its `.compacting`
/// name, the input it replaced deleted, and the next strict open refused a
/// log missing that range (iofault seed 691277427273078129).
@Suite("Compaction: a rename that fails with ENOENT")
struct SwapRenameErrorTests {
    @Test(
        "an output whose rename fails with ENOENT is not taken for renamed: the compaction fails, the reopen finishes it, nothing is lost",
        arguments: [1, 2])
    func spuriousMissingSource(output: Int) async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        let model = try await CompactionTests.churn(log)
        try await log.sync()
        disk.faults.install(.nthCall(output, of: .rename, paths: .suffix(".compacting"), error: .noSuchFileOrDirectory))
        await #expect(throws: OutboxLogError.self) { try await log.compact() }
        #expect(disk.faults.injectedFaults.count == 1, "the rule fired: \(disk.faults.injectedFaults)")
        _ = try? await log.close()
        disk.faults.removeAllRules()

        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        #expect(reopened.recoveryReport.interruptedCompaction == .completed)
        try await expectLog(reopened, equals: model, "after the reopen")
        try await reopened.close()
        #expect(!disk.allFiles().contains { $0.string.hasSuffix(".compacting") }, "\(disk.allFiles())")
    }
}
