import Dispatch
import Foundation
import OutboxLog
import OutboxLogTesting
import OutboxLocking
import SystemPackage
import Testing

/// Regressions for the engine bugs `outbox torture` found (Docs/RELIABILITY.md):
/// each test is the smallest history that broke the promise.
@Suite("Torture findings")
struct TortureFindingsTests {
    /// Values that fill a little over a third of a 4 KiB segment: two per segment.
    static func big(_ seed: Int) -> [UInt8] { .pattern(1500, seed: seed) }

    @Test("after a failed sync and an app kill, what recovery vouches for survives a power loss (fsyncgate)")
    func recoveryRewritesRecordsAFailedSyncLeftInThePageCache() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        for i in 0..<3 { try await log.put(LogKey("durable-\(i)"), .pattern(40, seed: i), durability: .durable) }
        try await log.put("written", .pattern(40, seed: 10), durability: .written)
        disk.faults.install(.nthCall(1, of: .synchronize))
        await #expect(throws: OutboxLogError.self) { try await log.put("doomed", [1], durability: .durable) }
        _ = try? await log.close()

        // The app dies. Linux keeps the pages that failed to sync readable
        // (marked clean), so the next process sees them and its sync succeeds
        // without writing them.
        disk.simulateProcessCrash()
        let recovered = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        let keys = Set(recovered.keys)
        #expect(keys.contains("written"))
        try await recovered.close()  // syncs, and a marker vouches for every record

        // Then the machine dies: what the recovery vouched for must be on disk.
        disk.simulatePowerLoss(.dropUnsynced)
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        #expect(Set(reopened.keys) == keys)
        for i in 0..<3 { #expect(try await reopened.get(LogKey("durable-\(i)"))?.value == .pattern(40, seed: i)) }
        try await reopened.close()
    }

    @Test("compaction never drops a record whose replacement is not yet durable")
    func compactionWaitsForReplacementsToBeDurable() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        try await log.put("key", Self.big(1), durability: .durable)  // segment 1
        try await log.put("other", Self.big(2), durability: .durable)
        try await log.put("filler", Self.big(3), durability: .durable)  // rolls: segment 2
        // The durable value is superseded by one only in memory, in the active
        // segment (which holds only live records, so compact() does not seal it).
        try await log.put("key", .pattern(100, seed: 4), durability: .buffered)
        let report = try await log.compact()
        #expect(report.inputSegments == 1)

        // Power fails before anything else is synced.
        disk.simulatePowerLoss(.dropUnsynced)
        withExtendedLifetime(log) {}
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        // Either value may survive; losing both is a hole in the history.
        let value = try await reopened.get("key")?.value
        #expect(value == Self.big(1) || value == .pattern(100, seed: 4))
        #expect(try await reopened.get("other")?.value == Self.big(2))
        try await reopened.close()
    }

    @Test("compaction skips a sealed segment whose bytes are still waiting to be written")
    func compactionDoesNotReadUnwrittenSegments() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        try await log.put("a", Self.big(1), durability: .written)  // segment 1
        try await log.put("a", Self.big(2), durability: .buffered)
        try await log.put("a", Self.big(3), durability: .written)  // segment 2 exists on disk
        try await log.put("a", Self.big(4), durability: .buffered)  // segment 2, in memory only
        try await log.put("b", Self.big(5), durability: .buffered)  // rolls: segment 3, in memory only
        try await log.put("c", .pattern(10, seed: 6), durability: .buffered)
        // Segment 2 is sealed but half-written: it must not be read yet.
        let report = try await log.compact()
        #expect(report.inputSegments == 1)
        #expect(try await log.get("a")?.value == Self.big(4))
        #expect(try await log.get("b")?.value == Self.big(5))
        try await log.close()
    }

    @Test("close() leaves no compaction running: the log touches no file after it returns")
    func closeStartsNoCompaction() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let armed = Locked((armed: false, calls: 0))
        let recorder = HookedFileSystem(base: disk) { _ in armed.withLock { if $0.armed { $0.calls += 1 } } }
        var configuration = simulatedConfiguration(recorder)
        configuration.automaticCompactionRatio = 0.5
        configuration.automaticCompactionMinimumBytes = 4096
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        // Buffered: nothing reaches the writer until close() flushes it all,
        // rolling two segments whose dead share makes a compaction due.
        for seed in 0..<4 { try await log.put("a", Self.big(seed), durability: .buffered) }
        try await log.put("b", Self.big(9), durability: .buffered)
        try await log.close()
        armed.withLock { $0.armed = true }
        // A compaction thread started during close() would call the file
        // system within microseconds; give it every chance to show up.
        for _ in 0..<20_000 where armed.withLock({ $0.calls }) == 0 { await Task.yield() }
        #expect(armed.withLock { $0.calls } == 0, "the log touched its files after close() returned")
        withExtendedLifetime(log) {}
    }

    @Test("a scan racing a compaction returns every live key, once, with its annotation")
    func scanRacingCompaction() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        // Holds the scan's first read until the compaction has swapped files.
        let gate = Locked((armed: false, held: false))
        let release = DispatchSemaphore(value: 0)
        let hooked = HookedFileSystem(base: disk) { operation in
            // Once armed, the first read is the scan's (nothing else reads
            // until the compaction starts, after the scan is held).
            guard operation == .read else { return }
            let hold = gate.withLock { gate -> Bool in
                guard gate.armed, !gate.held else { return false }
                gate.held = true
                return true
            }
            if hold { release.wait() }
        }
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(hooked))
        var expected: [LogKey: ([UInt8], [UInt8])] = [:]
        for round in 0..<3 {
            for i in 0..<30 {
                let key = LogKey("k\(i)")
                let value = [UInt8].pattern(100, seed: round * 100 + i)
                try await log.put(key, value, durability: .written)
                let note = [UInt8].pattern(8, seed: i)
                try await log.annotate(key, note, durability: .written)
                expected[key] = (value, note)
            }
        }
        gate.withLock { $0.armed = true }
        let scan = Task { try await log.entries(after: 0, limit: 10_000) }
        while !gate.withLock({ $0.held }) { await Task.yield() }
        let compaction = try await log.compact()
        #expect(compaction.inputSegments > 1)
        release.signal()
        let entries = try await scan.value
        #expect(entries.count == expected.count)
        #expect(Set(entries.map(\.key)) == Set(expected.keys))
        for entry in entries {
            #expect(entry.value == expected[entry.key]?.0 && entry.annotation?.payload == expected[entry.key]?.1, "\(entry.key)")
        }
        try await log.close()
    }
}

@Suite("Torture findings: the compaction commit point")
struct CompactionCommitPointTests {
    /// A log whose next compaction fails at the directory sync right after
    /// its intent was renamed into place: the commit point has passed.
    static func compactionFailingAfterCommit(_ disk: SimulatedFileSystem) async throws -> (OutboxLog, [LogKey: [UInt8]]) {
        let renamed = Locked(false)
        let hooked = HookedFileSystem(base: disk) { operation, paths in
            if operation == .rename, paths.last?.lastComponent?.string == "COMPACTION" {
                renamed.withLock { $0 = true }
                return nil
            }
            guard operation == .synchronizeDirectory else { return nil }
            return renamed.withLock { $0 } ? .ioError : nil
        }
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(hooked))
        var expected: [LogKey: [UInt8]] = [:]
        for round in 0..<4 {
            for i in 0..<20 {
                let value = [UInt8].pattern(120, seed: round * 100 + i)
                try await log.put(LogKey("k\(i)"), value, durability: .durable)
                expected[LogKey("k\(i)")] = value
            }
        }
        await #expect(throws: OutboxLogError.self) { try await log.compact() }
        #expect(renamed.withLock { $0 }, "the fault must hit after the commit point")
        return (log, expected)
    }

    @Test("a compaction failing after its commit point poisons the log and keeps its outputs for the next open",
          arguments: [false, true])
    func failureAfterCommit(powerLoss: Bool) async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (log, expected) = try await Self.compactionFailingAfterCommit(disk)
        await #expect { try await log.put("after", [1], durability: .buffered) } throws: {
            ($0 as? OutboxLogError)?.code == .poisoned
        }
        // The app dies, or the machine: the next open finishes or rolls back the swap.
        if powerLoss { disk.simulatePowerLoss(.dropUnsynced) } else { disk.simulateProcessCrash() }
        withExtendedLifetime(log) {}
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        #expect(reopened.recoveryReport.interruptedCompaction != nil)
        #expect(Set(reopened.keys) == Set(expected.keys))
        for (key, value) in expected { #expect(try await reopened.get(key)?.value == value) }
        try await reopened.close()
    }

    @Test("compact() waits for the roll it starts: a roll that fails fails the compaction and poisons the log (iofault seed 8734784727225801972 cycle 880)")
    func compactionWaitsForItsRoll() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        for i in 0..<10 { try await log.put(LogKey("k\(i % 3)"), .pattern(100, seed: i), durability: .durable) }
        // From now on no new segment can be created (the disk is full); a
        // compaction's own files are not affected.
        disk.faults.install(
            FaultRule(
                failing: .openFile, trigger: .call(1), repetition: .always,
                paths: .matching("new segments") { $0.string.hasSuffix(".seg.tmp") }, effect: .fail(.noSpace)))
        await #expect {
            _ = try await log.compact()
        } throws: { error in
            // The roll's own error (and the log is poisoned by it).
            let error = error as? OutboxLogError
            return error?.code == .io && error?.file?.string.hasSuffix(".seg.tmp") == true
        }
        #expect(disk.faults.injectedFaults.count == 1)
        // Refused from then on, not a success followed by a surprise.
        await #expect {
            try await log.put("after", [1], durability: .buffered)
        } throws: { error in
            (error as? OutboxLogError)?.code == .poisoned
        }
        _ = try? await log.close()
        disk.faults.removeAllRules()
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        #expect(Set(reopened.keys) == ["k0", "k1", "k2"])
        try await reopened.close()
    }

    @Test("an open whose checkpoint marker cannot be written fails with the write's .io error, not a poisoned log (iofault seed 7105559593793411149)")
    func failedCheckpointFailsTheOpenWithItsCause() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        for i in 0..<3 { try await log.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: .durable) }
        // The app dies without closing. The next open copies the newest
        // segment (write 1: its last record is vouched for by no watermark),
        // then writes a marker vouching for what it recovered (write 2), on
        // the writer thread: that write fails.
        disk.simulateProcessCrash()
        disk.faults.install(.nthCall(2, of: .write))
        await #expect {
            _ = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        } throws: { error in
            let error = error as? OutboxLogError
            return error?.code == .io && error?.message.contains("earlier") == false
        }
        #expect(disk.faults.injectedFaults.count == 1)
        disk.faults.removeAllRules()
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        #expect(Set(reopened.keys) == ["k0", "k1", "k2"])
        try await reopened.close()
    }
}
