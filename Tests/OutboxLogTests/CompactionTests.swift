import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

@Suite("Compaction")
struct CompactionTests {
    /// Fills a log with overwrites, deletes and annotations; returns the model.
    static func churn(_ log: OutboxLog, rounds: Int = 8, keys: Int = 40) async throws -> LogModel {
        var model: LogModel = [:]
        for round in 0..<rounds {
            for i in 0..<keys {
                let key = LogKey("key-\(i)")
                let value = [UInt8].pattern(40 + (i * 7 + round) % 90, seed: round * 1000 + i)
                try await log.put(key, value, durability: .written)
                model[key] = (value, nil)
                if (i + round) % 5 == 0 {
                    let note = [UInt8].pattern(6, seed: round + i)
                    try await log.annotate(key, note, durability: .buffered)
                    model[key]!.annotation = note
                }
                if (i * 3 + round) % 7 == 0 {
                    try await log.delete(key, durability: .buffered)
                    model[key] = nil
                }
            }
        }
        return model
    }

    @Test("compaction reclaims dead records, keeps live values and annotations, and nothing deleted comes back")
    func reclaimsAndPreserves() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        let model = try await Self.churn(log)
        let before = log.statistics
        #expect(before.deadBytes > before.liveBytes)

        let report = try await log.compact()
        #expect(report.inputSegments > 1)
        #expect(report.bytesAfter < report.bytesBefore)
        let after = log.statistics
        #expect(after.totalBytes < before.totalBytes)
        #expect(after.liveKeys == model.count)
        try await expectLog(log, equals: model, "after compaction")

        // Writes keep working and a second compaction finds little to do.
        try await log.put("late", [7], durability: .durable)
        try await log.close()

        let reopened = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        #expect(reopened.recoveryReport.isClean, "\(reopened.recoveryReport)")
        var expected = model
        expected["late"] = ([7], nil)
        try await expectLog(reopened, equals: expected, "after reopen")
        try await reopened.close()
    }

    @Test("a tombstone dropped by compaction never lets an older value resurrect")
    func tombstonesDoNotResurrect() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        // Old values in early segments, deleted much later.
        for i in 0..<30 { try await log.put(LogKey("old-\(i)"), .pattern(100, seed: i), durability: .buffered) }
        for i in 0..<200 { try await log.put(LogKey("filler-\(i % 10)"), .pattern(100, seed: i), durability: .buffered) }
        for i in 0..<30 where i % 2 == 0 { try await log.delete(LogKey("old-\(i)"), durability: .buffered) }
        for i in 0..<100 { try await log.put(LogKey("filler-\(i % 10)"), .pattern(90, seed: i), durability: .buffered) }
        try await log.compact()
        try await log.compact()
        try await log.close()
        let reopened = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        for i in 0..<30 {
            #expect(reopened.contains(LogKey("old-\(i)")) == (i % 2 == 1), "old-\(i)")
        }
        try await reopened.close()
    }

    @Test("appends that race a compaction keep their latest value")
    func appendsDuringCompaction() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var model = try await Self.churn(log, rounds: 6)
        async let compaction = log.compact()
        for i in 0..<200 {
            let key = LogKey("key-\(i % 40)")
            let value = [UInt8].pattern(50, seed: 90_000 + i)
            try await log.put(key, value, durability: .written)
            model[key] = (value, nil)
        }
        _ = try await compaction
        try await expectLog(log, equals: model, "after racing compaction")
        try await log.close()
        let reopened = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        try await expectLog(reopened, equals: model, "after reopen")
        try await reopened.close()
    }

    @Test("automatic compaction starts after a roll once dead bytes pass the ratio")
    func automaticCompaction() async throws {
        let directory = TemporaryDirectory()
        var configuration = smallSegments()
        configuration.automaticCompactionRatio = 0.5
        let log = try await OutboxLog.open(at: directory.path, configuration: configuration)
        for i in 0..<2000 {
            try await log.put(LogKey("k\(i % 5)"), .pattern(100, seed: i), durability: .written)
        }
        await log.waitForBackgroundCompaction()
        let statistics = log.statistics
        #expect(statistics.compactions > 0)
        // 2000 × 137 bytes were written; only five keys are live.
        #expect(statistics.totalBytes < 40 * 4096)
        try await log.close()
    }

    /// How many mutating file operations opening the log takes, and how many
    /// a compaction then takes, found by a dry run on a copy of the disk.
    static func countOperations(on disk: SimulatedFileSystem) async throws -> (open: Int, compaction: Int) {
        let counter = CrashingFileSystem(base: disk.snapshot(), crashAt: nil)
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(counter))
        let opening = counter.mutatingCalls
        try await log.compact()
        let compaction = counter.mutatingCalls - opening
        try await log.close()
        return (opening, compaction)
    }

    @Test(
        "a crash before any file operation of a compaction recovers exactly the live set",
        arguments: [nil, PowerLossMode.dropUnsynced, .keepRandomPrefix, .tearLastWrite, .reorder])
    func crashAtEveryCompactionStep(powerLoss: PowerLossMode?) async throws {
        // A cleanly closed log with sealed segments full of dead records.
        let pristine = SimulatedFileSystem(directories: ["/data"])
        let setup = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(pristine))
        let model = try await Self.churn(setup, rounds: 5, keys: 25)
        try await setup.close()

        let operations = try await Self.countOperations(on: pristine)
        #expect(operations.compaction >= 8)
        var outcomes: [RecoveryReport.InterruptedCompaction?: Int] = [:]
        for step in 1...operations.compaction {
            let disk = pristine.snapshot()
            let victim = CrashingFileSystem(base: disk, crashAt: operations.open + step)
            let running = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(victim))
            await #expect(throws: OutboxLogError.self, "step \(step)") { try await running.compact() }
            #expect(victim.hasCrashed)
            if let powerLoss {
                disk.simulatePowerLoss(powerLoss, seed: UInt64(step))
            } else {
                disk.simulateProcessCrash()
            }
            let context = "crash before compaction step \(step) of \(operations.compaction), \(powerLoss.map { "\($0)" } ?? "process crash")"
            let recovered = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
            try await expectLog(recovered, equals: model, Comment(rawValue: context))
            outcomes[recovered.recoveryReport.interruptedCompaction, default: 0] += 1
            let leftovers = disk.allFiles().filter {
                let name = $0.lastComponent?.string ?? ""
                return name.hasSuffix(".compacting") || name.hasSuffix(".tmp") || name == "COMPACTION"
            }
            #expect(leftovers.isEmpty, "\(context): \(leftovers)")
            try await recovered.close()
            withExtendedLifetime(running) {}
        }
        if powerLoss == nil {
            // Both sides of the commit point were hit.
            #expect(outcomes[.completed, default: 0] > 0, "\(outcomes)")
            #expect(outcomes[.rolledBack, default: 0] > 0, "\(outcomes)")
        }
    }
}
