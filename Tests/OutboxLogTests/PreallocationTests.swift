import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Space allocated ahead (`preallocation`, Docs/FORMAT.md "Space allocated
/// ahead"): the zeros after the newest segment's records are not a torn
/// tail, anything else there is reported, a full disk while zero-filling
/// loses nothing, and a kill or a power loss loses nothing acknowledged.
@Suite("Preallocated segments")
struct PreallocationTests {
    static let newest: FilePath = simulatedLogDirectory.appending("00000000000000000001.seg")

    /// One big segment, zero-filled 16 KiB ahead.
    static func configuration(_ disk: SimulatedFileSystem, segmentSize: Int = 1 << 20) -> OutboxLog.Configuration {
        var configuration = simulatedConfiguration(disk, segmentSize: segmentSize)
        configuration.preallocation = 16 << 10
        return configuration
    }

    /// Writes `count` durable records `k<i>` (100 bytes each) and kills the
    /// process; returns where the records end in the newest segment.
    static func writeThenKill(_ disk: SimulatedFileSystem, count: Int) async throws -> Int {
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration(disk))
        for i in 0..<count { try await log.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: .durable) }
        disk.simulateProcessCrash()
        _ = try? await log.close()
        return segmentHeaderSize + count * frameSize(key: "k0", payload: 100) + (count > 10 ? count - 10 : 0)
    }

    @Test("the zeros allocated ahead are recognised on reopen; appends resume where the records end")
    func zeroTailResumesAtRecordsEnd() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let recordsEnd = try await Self.writeThenKill(disk, count: 20)
        let before = try #require(disk.contents(of: Self.newest))
        #expect(before.count >= recordsEnd + (12 << 10), "zero-filled 12 to 16 KiB past the records")
        #expect(before[recordsEnd...].allSatisfy { $0 == 0 })

        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        #expect(log.recoveryReport.truncatedTail == nil)
        #expect(log.recoveryReport.skipped.isEmpty)
        try await log.put("after", .pattern(100, seed: 99), durability: .durable)
        disk.simulateProcessCrash()
        _ = try? await log.close()

        // The new record sits right after the old ones (a marker between, as
        // after every open after a crash): nothing is lost, nothing skipped.
        let after = try #require(disk.contents(of: Self.newest))
        #expect(Array(after[..<recordsEnd]) == Array(before[..<recordsEnd]))
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        #expect(reopened.recoveryReport.truncatedTail == nil)
        #expect(reopened.recoveryReport.skipped.isEmpty)
        for i in 0..<20 { #expect(try await reopened.get(LogKey("k\(i)"))?.value == .pattern(100, seed: i)) }
        #expect(try await reopened.get("after")?.value == .pattern(100, seed: 99))
        try await reopened.close()
        // A clean close cuts the zeros: the file ends with its records.
        let closed = try #require(disk.contents(of: Self.newest))
        let marker = frameSize(key: "", payload: 0)
        #expect(closed.count == recordsEnd + marker + frameSize(key: "after", payload: 100) + marker)
    }

    @Test("a non-zero byte in the zeros after the records is reported as a torn tail (file, offset), nothing acknowledged lost")
    func garbageInAllocatedSpaceIsReported() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let recordsEnd = try await Self.writeThenKill(disk, count: 20)
        try disk.modifyContents(of: Self.newest) { $0[recordsEnd + 5000] = 0x5A }
        let size = try #require(disk.contents(of: Self.newest)).count

        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        let tail = try #require(log.recoveryReport.truncatedTail)
        #expect(tail.file == "00000000000000000001.seg")
        #expect(tail.offset == Int64(recordsEnd))
        #expect(tail.bytes == Int64(size - recordsEnd))
        for i in 0..<20 { #expect(try await log.get(LogKey("k\(i)"))?.value == .pattern(100, seed: i)) }
        try await log.close()
    }

    @Test("zeros after the records of a sealed segment are damage: the strict open fails naming file and offset")
    func zerosInSealedSegmentAreDamage() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        var configuration = Self.configuration(disk, segmentSize: 4096)
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        for i in 0..<100 { try await log.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: .durable) }
        try await log.close()
        let segments = disk.allFiles().filter { $0.string.hasSuffix(".seg") }.sorted { $0.string < $1.string }
        try #require(segments.count >= 3)
        // The writer cut the zeros off every sealed segment before sealing it.
        for sealed in segments.dropLast() { #expect(disk.contents(of: sealed)?.last != 0, "\(sealed)") }
        let size = try #require(disk.contents(of: segments[1])).count
        try disk.modifyContents(of: segments[1]) { $0 += [UInt8](repeating: 0, count: 512) }

        configuration.recoveryMode = .strict
        do {
            _ = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
            Issue.record("opened a log whose sealed segment ends in zeros")
        } catch {
            #expect(error.code == .corruption)
            #expect(error.file == segments[1])
            #expect(error.offset == Int64(size))
        }
    }

    @Test("a record torn by a crash and followed by zeros is a torn tail, cut at the record")
    func tornRecordThenZeros() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let recordsEnd = try await Self.writeThenKill(disk, count: 20)
        let last = recordsEnd - frameSize(key: "k19", payload: 100)
        // Its second half never reached the disk: zeros, like the space after it.
        try disk.zeroBytes(inFile: Self.newest, (last + 60)..<recordsEnd)
        let size = try #require(disk.contents(of: Self.newest)).count

        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        let tail = try #require(log.recoveryReport.truncatedTail)
        #expect(tail.offset == Int64(last))
        #expect(tail.bytes == Int64(size - last))
        for i in 0..<19 { #expect(try await log.get(LogKey("k\(i)"))?.value == .pattern(100, seed: i)) }
        #expect(!log.contains("k19"))
        try await log.put("next", [1], durability: .durable)
        try await log.close()
    }

    @Test("ENOSPC while zero-filling: the append still succeeds; when the disk stays full the next append fails typed; after space returns nothing is lost")
    func diskFullWhileAllocating() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        // The first append creates the segment: write #1 is its header, #2
        // the record, #3 the zeros after it; every later write fails too.
        disk.faults.install(.diskFull(atWrite: 3))
        try await log.put("first", .pattern(100, seed: 1), durability: .durable)
        #expect(disk.faults.injectedFaults.count == 1, "the zero-fill met the full disk")
        do {
            try await log.put("second", .pattern(100, seed: 2), durability: .durable)
            Issue.record("an append succeeded on a full disk")
        } catch {
            #expect(error.code == .io)
            #expect(error.file == Self.newest)
        }
        _ = try? await log.close()

        // Space returns; the machine had lost power meanwhile.
        disk.faults.removeAllRules()
        _ = disk.simulatePowerLoss(.dropUnsynced)
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        #expect(try await reopened.get("first")?.value == .pattern(100, seed: 1))
        #expect(!reopened.contains("second"))
        try await reopened.put("third", .pattern(100, seed: 3), durability: .durable)
        try await reopened.close()
    }

    @Test("ENOSPC once while zero-filling changes nothing but speed: later appends and rolls go on")
    func transientDiskFullWhileAllocating() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk, segmentSize: 8192))
        disk.faults.install(.diskFull(atWrite: 3, persistent: false))
        for i in 0..<200 { try await log.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: .durable) }
        #expect(disk.faults.injectedFaults.count == 1)
        try await log.close()
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk, segmentSize: 8192))
        #expect(reopened.recoveryReport.truncatedTail == nil && reopened.recoveryReport.skipped.isEmpty)
        for i in 0..<200 { #expect(try await reopened.get(LogKey("k\(i)"))?.value == .pattern(100, seed: i)) }
        try await reopened.close()
    }

    @Test("a failed cut of the zeros before sealing fails the append with .io and seals nothing; reopen loses nothing")
    func failedTrimBeforeSealing() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk, segmentSize: 4096))
        disk.faults.install(.nthCall(1, of: .truncate))
        var acknowledged: [Int] = []
        for i in 0..<100 {
            do {
                try await log.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: .durable)
                acknowledged.append(i)
            } catch {
                #expect(error.code == .io)
                break
            }
        }
        #expect(acknowledged.count < 100, "the roll met the failed truncate")
        _ = try? await log.close()
        disk.faults.removeAllRules()
        _ = disk.simulatePowerLoss(.dropUnsynced)
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk, segmentSize: 4096))
        for i in acknowledged { #expect(try await reopened.get(LogKey("k\(i)"))?.value == .pattern(100, seed: i)) }
        try await reopened.close()
    }

    @Test("a failed directory sync while rolling to a new segment loses no record of the sealed one: the strict open accepts the log")
    func failedRollKeepsTheSealedRecords() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk, segmentSize: 4096))
        // The first directory sync after the open creates the first
        // segment; the second is the roll's, when the new segment is
        // already renamed into place.
        disk.faults.install(.nthCall(2, of: .synchronizeDirectory))
        // Buffered appends, then one durable: the writer gets the sealed
        // segment's last records and the roll in one piece of work.
        var acknowledged: [Int] = []
        for i in 0..<60 {
            do {
                try await log.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: i % 20 == 19 ? .durable : .buffered)
                if i % 20 == 19 { acknowledged += (i - 19)...i }
            } catch {
                #expect(error.code == .io)
                break
            }
        }
        #expect(acknowledged.count < 60, "the roll met the failed directory sync")
        _ = try? await log.close()
        disk.faults.removeAllRules()

        // Nothing lost on disk: the sealed segment still ends where the new
        // one begins, so the strict open accepts the log.
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk, segmentSize: 4096))
        #expect(reopened.recoveryReport.skipped.isEmpty)
        for i in acknowledged { #expect(try await reopened.get(LogKey("k\(i)"))?.value == .pattern(100, seed: i)) }
        try await reopened.close()
    }

    @Test(
        "a kill or a power loss with preallocation on loses no acknowledged record",
        arguments: [PowerLossMode?.none] + PowerLossMode.allCases.map(Optional.some))
    func crashLosesNothingAcknowledged(mode: PowerLossMode?) async throws {
        for seed in UInt64(1)...6 {
            var random = SplitMix64(seed: seed)
            let disk = SimulatedFileSystem(directories: ["/data"])
            var acknowledged: [LogKey: [UInt8]] = [:]
            for round in 0..<3 {
                let log = try await OutboxLog.open(
                    at: simulatedLogDirectory, configuration: Self.configuration(disk, segmentSize: 8192))
                for i in 0..<random.next(below: 120) {
                    let key = LogKey("r\(round)-\(i % 40)")
                    let value = [UInt8].pattern(random.next(below: 300) + 1, seed: i)
                    let durability: Durability = mode == nil ? (random.next(below: 2) == 0 ? .written : .durable) : .durable
                    try await log.put(key, value, durability: durability)
                    acknowledged[key] = value
                }
                if let mode { _ = disk.simulatePowerLoss(mode, seed: seed * 10 + UInt64(round)) } else { disk.simulateProcessCrash() }
                _ = try? await log.close()
            }
            let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk, segmentSize: 8192))
            for (key, value) in acknowledged { #expect(try await log.get(key)?.value == value, "seed \(seed): \(key)") }
            try await log.close()
        }
    }
}
