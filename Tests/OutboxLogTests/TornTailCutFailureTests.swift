import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Recovery cuts a torn tail off the newest segment; when that cut fails,
/// the open must fail with `.io`. It used to go on (the failure was
/// swallowed together with an ignorable `close`): the torn bytes stayed,
/// the open rolled to a new segment behind them, and the next strict open
/// refused a sealed segment with a frame past its end (iofault seed 1001,
/// cycle 16176).
@Suite("Recovery: a failed cut of a torn tail")
struct TornTailCutFailureTests {
    @Test("the open fails with .io and changes nothing; a later open cuts the tail and loses nothing acknowledged")
    func failedCutFailsTheOpen() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let first = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
        for i in 0..<5 { try await first.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: .durable) }
        // A clean close and an open: markers vouch for every record, so the
        // tail is cut in place (not copied to a replacement).
        try await first.close()
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
        try await log.sync()
        await Self.tearNextAppendThenKill(log, disk)

        await Self.expectOpenFailsWithIO(disk, .nthCall(1, of: .truncate))
        #expect(disk.faults.injectedFaults.last?.operation == .truncate, "the cut was attempted: \(disk.faults.injectedFaults)")
        disk.faults.removeAllRules()

        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
        #expect(reopened.recoveryReport.truncatedTail != nil)
        for i in 0..<5 { #expect(try await reopened.get(LogKey("k\(i)"))?.value == .pattern(100, seed: i)) }
        try await reopened.put("after", [1], durability: .durable)
        try await reopened.close()
        let again = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
        #expect(again.recoveryReport.isClean, "\(again.recoveryReport)")
        try await again.close()
    }

    @Test("a failed read of the copy that replaces a torn segment fails the open with .io, not .corruption")
    func failedReadOfTheReplacementIsIO() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
        for i in 0..<5 { try await log.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: .durable) }
        // Torn, and no marker after the records: recovery copies them to a
        // replacement segment and reads the copy back before it takes over.
        await Self.tearNextAppendThenKill(log, disk)

        await Self.expectOpenFailsWithIO(disk, .nthCall(1, of: .read, paths: .suffix(".seg.tmp")))
        #expect(disk.faults.injectedFaults.last?.operation == .read, "\(disk.faults.injectedFaults)")
        disk.faults.removeAllRules()

        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
        for i in 0..<5 { #expect(try await reopened.get(LogKey("k\(i)"))?.value == .pattern(100, seed: i)) }
        try await reopened.close()
    }

    /// The next append is torn (a prefix of its bytes reaches the file),
    /// then the process dies.
    static func tearNextAppendThenKill(_ log: OutboxLog, _ disk: SimulatedFileSystem) async {
        disk.faults.install(.diskFull(atWrite: 1, persistent: false))
        await #expect(throws: OutboxLogError.self) { try await log.put("torn", .pattern(300, seed: 9), durability: .durable) }
        disk.simulateProcessCrash()
        _ = try? await log.close()
        disk.faults.removeAllRules()
    }

    /// With `rule` installed, the open must fail with `.io`.
    static func expectOpenFailsWithIO(_ disk: SimulatedFileSystem, _ rule: FaultRule) async {
        disk.faults.install(rule)
        let error = await #expect(throws: OutboxLogError.self) {
            let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
            try? await reopened.close()
        }
        #expect(error?.code == .io, "\(String(describing: error))")
    }
}
