import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Write and sync failures, injected through the file-system layer.
@Suite("I/O faults poison the log")
struct FaultInjectionTests {
    @Test("a failed sync fails the append, poisons the log, is never retried, and loses nothing acknowledged")
    func failedSyncPoisons() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        var acknowledged: [LogKey: [UInt8]] = [:]
        for i in 0..<20 {
            let value = [UInt8].pattern(50, seed: i)
            try await log.put(LogKey("k\(i)"), value, durability: .durable)
            acknowledged[LogKey("k\(i)")] = value
        }
        disk.faults.install(.nthCall(1, of: .synchronize))
        let syncsBefore = disk.faults.callCount(of: .synchronize)
        await #expect(throws: OutboxLogError.self) {
            try await log.put("doomed", [1], durability: .durable)
        }
        // Every later call is refused with .poisoned, and no sync is retried.
        for durability in Durability.allCases {
            do {
                try await log.put("after", [2], durability: durability)
                Issue.record("append after a failed sync succeeded")
            } catch {
                #expect(error.code == .poisoned)
            }
        }
        await #expect(throws: OutboxLogError.self) { _ = try await log.get("k1") }
        await #expect(throws: OutboxLogError.self) { try await log.sync() }
        #expect(disk.faults.callCount(of: .synchronize) == syncsBefore + 1)
        _ = try? await log.close()

        // Linux dropped the unsynced pages when the sync failed; then the machine died.
        disk.simulatePowerLoss(.dropUnsynced)
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        for (key, value) in acknowledged { #expect(try await reopened.get(key)?.value == value) }
        #expect(!reopened.contains("after"))
        try await reopened.close()
    }

    @Test("every waiter of a failed group commit gets the error")
    func groupCommitFailureReachesEveryone() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
        try await log.put("first", [0], durability: .durable)
        disk.faults.install(FaultRule(failing: .synchronize, repetition: .always))
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<32 {
                group.addTask { (try? await log.put(LogKey("c\(i)"), [UInt8(i)], durability: .durable)) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { !$0 }, "no durable append may succeed without a successful sync")
        _ = try? await log.close()
    }

    @Test("a failed write (disk full mid-record) poisons the log; a restart recovers every acknowledged record")
    func failedWritePoisons() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        var acknowledged: [LogKey: [UInt8]] = [:]
        for i in 0..<30 {
            let value = [UInt8].pattern(100, seed: i)
            try await log.put(LogKey("k\(i)"), value, durability: .written)
            acknowledged[LogKey("k\(i)")] = value
        }
        disk.faults.install(.diskFull(atWrite: 1))
        await #expect(throws: OutboxLogError.self) {
            try await log.put("big", .pattern(3000, seed: 99), durability: .written)
        }
        await #expect(throws: OutboxLogError.self) { try await log.put("next", [1], durability: .buffered) }
        disk.faults.removeAllRules()
        disk.simulateProcessCrash()
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        for (key, value) in acknowledged { #expect(try await reopened.get(key)?.value == value) }
        #expect(!reopened.contains("big"))
        try await reopened.close()
        withExtendedLifetime(log) {}
    }

    /// What a workload got acknowledged, and what it would be had the
    /// operation that failed taken effect (a failed call may or may not have
    /// reached the disk; it was never acknowledged either way).
    struct Outcome {
        var acknowledged: LogModel = [:]
        var withFailedOperation: LogModel = [:]
        var failed = false
    }

    /// A workload of puts, deletes and annotations with segment rolls, that
    /// stops at the first error.
    static func workload(_ log: OutboxLog, operations: Int) async -> Outcome {
        var outcome = Outcome()
        for i in 0..<operations {
            let key = LogKey("k\(i % 23)")
            let durability: Durability = i % 3 == 0 ? .durable : .written
            var next = outcome.acknowledged
            do {
                if i % 11 == 5, next[key] != nil {
                    next[key] = nil
                    outcome.withFailedOperation = next
                    _ = try await log.delete(key, durability: durability)
                } else if i % 7 == 3, next[key] != nil {
                    let note = [UInt8].pattern(5, seed: i)
                    next[key]!.annotation = note
                    outcome.withFailedOperation = next
                    try await log.annotate(key, note, durability: durability)
                } else {
                    let value = [UInt8].pattern(60 + i % 50, seed: i)
                    next[key] = (value, nil)
                    outcome.withFailedOperation = next
                    try await log.put(key, value, durability: durability)
                }
                outcome.acknowledged = next
            } catch {
                outcome.failed = true
                return outcome
            }
        }
        outcome.withFailedOperation = outcome.acknowledged
        return outcome
    }

    /// Whether `log` holds exactly `model`.
    static func matches(_ log: OutboxLog, _ model: LogModel) async throws -> Bool {
        guard Set(log.keys) == Set(model.keys) else { return false }
        for (key, expected) in model {
            let entry = try await log.get(key)
            if entry?.value != expected.value || entry?.annotation?.payload != expected.annotation { return false }
        }
        return true
    }

    @Test("a failure at any mutating file operation loses no acknowledged record")
    func failureAtEveryOperation() async throws {
        let operations = 120
        let counter = CrashingFileSystem(base: SimulatedFileSystem(directories: ["/data"]), crashAt: nil)
        let dry = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(counter))
        _ = await Self.workload(dry, operations: operations)
        let total = counter.mutatingCalls
        withExtendedLifetime(dry) {}
        #expect(total > operations)

        for crashAt in 1...total {
            let disk = SimulatedFileSystem(directories: ["/data"])
            let crashing = CrashingFileSystem(base: disk, crashAt: crashAt)
            var outcome = Outcome(failed: true)
            var log: OutboxLog?
            do {
                log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(crashing))
                outcome = await Self.workload(log!, operations: operations)
            } catch {
                // The open itself failed: nothing was acknowledged.
            }
            #expect(outcome.failed, "crash point \(crashAt) was never reached")
            // The app dies: every acknowledged record must come back, and
            // nothing but the one unacknowledged operation may be added.
            disk.simulateProcessCrash()
            let recovered = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
            let exact = try await Self.matches(recovered, outcome.acknowledged)
            let withFailed = try await Self.matches(recovered, outcome.withFailedOperation)
            #expect(exact || withFailed, "process crash at mutating call \(crashAt): \(recovered.keys.count) keys")
            try await recovered.close()
            withExtendedLifetime(log) {}
        }
    }
}
