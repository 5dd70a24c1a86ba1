import Dispatch
import Foundation
import OutboxLocking
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// The index checkpoint (`INDEX`) is an accelerator, never the truth: a
/// checkpoint torn by a crash, damaged, left over from before a compaction,
/// or taken of another log is not used, and the open reads the whole log;
/// damage the background load finds in a segment written after the
/// checkpoint is reported by the calls after the open, and the appends made
/// meanwhile survive it.
@Suite("Index checkpoint")
struct IndexCheckpointTests {
    static func configuration(_ disk: any FileSystem, deferred: Bool = true) -> OutboxLog.Configuration {
        var configuration = simulatedConfiguration(disk)
        configuration.indexCheckpoints = true
        configuration.indexCheckpointInterval = 1 << 30  // only at close and after compaction
        configuration.opensBeforeIndexIsLoaded = deferred
        return configuration
    }

    /// Where the log's index checkpoint lives.
    static let checkpointPath = simulatedLogDirectory.appending("INDEX")

    /// A fresh simulated disk with a ``populated(_:keys:)`` log on it, the
    /// log's model, and the index checkpoint its close wrote.
    static func populatedWithCheckpoint() async throws -> (SimulatedFileSystem, LogModel, checkpoint: [UInt8]) {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let model = try await populated(disk)
        return (disk, model, try #require(disk.contents(of: checkpointPath)))
    }

    /// A cleanly closed log (so with a checkpoint) of `keys` keys over
    /// several segments, some overwritten, deleted and annotated.
    static func populated(_ disk: SimulatedFileSystem, keys: Int = 60) async throws -> LogModel {
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration(disk))
        var model: LogModel = [:]
        for round in 0..<3 {
            for index in 0..<keys {
                let key = LogKey("key-\(index)")
                let value = [UInt8].pattern(90 + index % 7, seed: round * 1000 + index)
                try await log.put(key, value, durability: .buffered)
                model[key] = (value, nil)
            }
        }
        for index in stride(from: 0, to: keys, by: 5) {
            try await log.delete(LogKey("key-\(index)"), durability: .buffered)
            model[LogKey("key-\(index)")] = nil
        }
        for index in stride(from: 1, to: keys, by: 3) where model[LogKey("key-\(index)")] != nil {
            let note = [UInt8].pattern(12, seed: index)
            try await log.annotate(LogKey("key-\(index)"), note, durability: .buffered)
            model[LogKey("key-\(index)")]!.annotation = note
        }
        try await log.close()
        return model
    }

    @Test("a clean reopen reads the checkpoint and the newest segment only")
    func usesTheCheckpoint() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let model = try await Self.populated(disk)
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        let report = log.recoveryReport
        #expect(report.indexCheckpoint != nil)
        #expect(report.checkpointRejected == nil)
        #expect(report.segments > 3)
        try await expectLog(log, equals: model)
        #expect(log.recoveryReport.liveKeys == model.count)
        try await log.close()
    }

    @Test("a checkpoint that does not verify is not used, wherever it is damaged", arguments: [4, 20, 61, 70, 200, -3])
    func damagedCheckpoint(offset: Int) async throws {
        let (disk, model, checkpoint) = try await Self.populatedWithCheckpoint()
        let path = Self.checkpointPath
        let size = checkpoint.count
        let at = offset >= 0 ? offset : size + offset
        try disk.flipBit(inFile: path, atByte: at, bit: 4)
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        try await expectLog(log, equals: model, "damage at byte \(at)")
        #expect(log.recoveryReport.indexCheckpoint == nil, "damage at byte \(at)")
        #expect(log.recoveryReport.checkpointRejected != nil, "damage at byte \(at)")
        #expect(log.recoveryReport.isClean)
        try await log.close()
    }

    @Test("a checkpoint cut short, or left as a temporary file by a crash, is not used")
    func truncatedOrTemporary() async throws {
        let (disk, model, bytes) = try await Self.populatedWithCheckpoint()
        let path = Self.checkpointPath
        for size in [0, 30, 64, bytes.count / 2, bytes.count - 1] {
            let fork = disk.snapshot()
            try fork.setContents(of: path, to: Array(bytes.prefix(size)))
            try Self.create(simulatedLogDirectory.appending("INDEX.tmp"), bytes, on: fork)
            let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(fork))
            try await expectLog(log, equals: model, "INDEX cut to \(size) bytes")
            #expect(log.recoveryReport.indexCheckpoint == nil)
            #expect(log.recoveryReport.removedTemporaryFiles == ["INDEX.tmp"])
            try await log.close()
        }
    }

    @Test("a checkpoint from before a compaction is not used: the segments it names are gone")
    func staleAfterCompaction() async throws {
        let (disk, model, before) = try await Self.populatedWithCheckpoint()
        let path = Self.checkpointPath
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        let report = try await log.compact()
        #expect(report.inputSegments > 0)
        try await log.close()
        #expect(disk.contents(of: path) != before, "compaction and close write a new checkpoint")
        try disk.setContents(of: path, to: before)
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        try await expectLog(reopened, equals: model)
        #expect(reopened.recoveryReport.indexCheckpoint == nil)
        #expect(reopened.recoveryReport.checkpointRejected == .segmentsChanged)
        try await reopened.close()
    }

    @Test("another log's checkpoint is not used")
    func foreignCheckpoint() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let model = try await Self.populated(disk)
        let other = SimulatedFileSystem(directories: ["/data"])
        _ = try await Self.populated(other, keys: 30)
        try disk.setContents(of: Self.checkpointPath, to: try #require(other.contents(of: Self.checkpointPath)))
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        try await expectLog(log, equals: model)
        #expect(log.recoveryReport.indexCheckpoint == nil)
        try await log.close()
    }

    @Test("a crash at any file operation of writing the checkpoint leaves a log that reopens whole", arguments: [false, true])
    func crashWhileWritingCheckpoint(powerLoss: Bool) async throws {
        let pristine = SimulatedFileSystem(directories: ["/data"])
        let model = try await Self.populated(pristine)
        // How many mutating calls an open and a close (which writes the checkpoint) take.
        let counter = CrashingFileSystem(base: pristine.snapshot(), crashAt: nil)
        let dry = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(counter))
        let opening = counter.mutatingCalls
        try await dry.put("extra", [1, 2, 3], durability: .buffered)
        try await dry.close()
        let total = counter.mutatingCalls
        #expect(total - opening >= 6)
        var expected = model
        expected["extra"] = ([1, 2, 3], nil)
        for step in (opening + 1)...total {
            let disk = pristine.snapshot()
            let victim = CrashingFileSystem(base: disk, crashAt: step)
            let running = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(victim))
            try? await running.put("extra", [1, 2, 3], durability: .buffered)
            try? await running.close()
            if powerLoss { disk.simulatePowerLoss(.keepRandomPrefix, seed: UInt64(step)) } else { disk.simulateProcessCrash() }
            let recovered = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
            var acceptable = model
            if try await recovered.get("extra") != nil { acceptable = expected }
            try await expectLog(recovered, equals: acceptable, "crash at mutating call \(step) of \(total)")
            try await recovered.close()
            withExtendedLifetime(running) {}
        }
    }

    @Test("damage in a segment written after the checkpoint is reported after the open; the appends made meanwhile survive")
    func lateDamage() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        _ = try await Self.populated(disk)
        // Segments written after the checkpoint, then a kill (no new checkpoint).
        var log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        for index in 0..<120 { try await log.put(LogKey("late-\(index)"), .pattern(100, seed: index), durability: .buffered) }
        try await log.flush()
        disk.simulateProcessCrash()
        let segments = try disk.contentsOfDirectory(simulatedLogDirectory).filter { $0.hasSuffix(".seg") }.sorted()
        #expect(segments.count >= 4)
        // Flip a byte in the middle of the second newest segment.
        let victim = simulatedLogDirectory.appending(segments[segments.count - 2])
        let victimSize = try #require(disk.contents(of: victim)).count
        try disk.flipBit(inFile: victim, atByte: victimSize / 2, bit: 6)

        // Hold the index load (its read of the checkpoint's keys) until an
        // append after the open is acknowledged.
        let (opened, gate) = try await Self.openHoldingTheLoad(disk)
        log = opened
        #expect(log.recoveryReport.indexCheckpoint != nil)
        #expect(!log.isIndexLoaded)
        // The open returned; appends go on; then the index load finds the damage.
        try await log.put("after-open", [7, 7, 7], durability: .durable)
        gate.signal()
        // The get either waits for the load and gets the damage itself, or
        // (the load already over) finds the log poisoned by it: both name
        // the damaged segment.
        let failure = await #expect(throws: OutboxLogError.self) { _ = try await log.get("after-open") }
        #expect(failure?.code == .corruption || failure?.code == .poisoned)
        #expect(failure?.file == victim)
        let later = await #expect(throws: OutboxLogError.self) { try await log.put("later", [1], durability: .buffered) }
        #expect(later?.code == .poisoned)
        try? await log.close()
        disk.simulateProcessCrash()
        #expect(disk.contents(of: Self.checkpointPath) == nil, "the checkpoint is not trusted again")

        // A strict open fails with the damage's file and offset; salvage keeps the late append.
        let strict = await #expect(throws: OutboxLogError.self) {
            _ = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        }
        #expect(strict?.code == .corruption)
        var salvage = Self.configuration(disk)
        salvage.recoveryMode = .salvage
        let salvaged = try await OutboxLog.open(at: simulatedLogDirectory, configuration: salvage)
        #expect(try await salvaged.get("after-open")?.value == [7, 7, 7])
        try await salvaged.close()
    }

    static func create(_ path: FilePath, _ bytes: [UInt8], on disk: SimulatedFileSystem) throws {
        let descriptor = try disk.openFile(path, mode: .createNew)
        _ = try bytes.withUnsafeBytes { try disk.write(descriptor, $0, at: 0) }
        try disk.close(descriptor)
    }

    /// A log opened on `disk` whose index load waits (before reading the
    /// checkpoint's keys) until the returned semaphore is signalled.
    static func openHoldingTheLoad(_ disk: SimulatedFileSystem) async throws -> (OutboxLog, DispatchSemaphore) {
        let gate = DispatchSemaphore(value: 0)
        let opens = Locked(0)
        let held = HookedFileSystem(base: disk) { operation, paths in
            if operation == .openFile, paths.first?.lastComponent?.string == "INDEX",
                opens.withLock({ count -> Int in count += 1; return count }) == 2
            {
                gate.wait()
            }
            return nil
        }
        return (try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(held)), gate)
    }

    @Test("records appended while the index loads are indexed after the loaded ones, in order")
    func appendsWhileLoading() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        var model = try await Self.populated(disk)
        let (log, gate) = try await Self.openHoldingTheLoad(disk)
        #expect(!log.isIndexLoaded)
        // New keys, keys the checkpoint holds (overwritten), a batch, enough to roll segments.
        for index in 0..<80 {
            let key = LogKey(index % 2 == 0 ? "key-\(index)" : "new-\(index)")
            let value = [UInt8].pattern(120, seed: 7_000 + index)
            try await log.put(key, value, durability: .buffered)
            model[key] = (value, nil)
        }
        let batch: [LogWrite] = [.value("key-3", [3]), .value("key-4", [4]), .tombstone("new-1")]
        try await log.append(batch, durability: .durable)
        model["key-3"] = ([3], nil)
        model["key-4"] = ([4], nil)
        model["new-1"] = nil
        #expect(!log.isIndexLoaded)
        gate.signal()
        try await expectLog(log, equals: model)
        let statistics = log.statistics
        try await log.close()
        let reference = try await OutboxLog.open(
            at: simulatedLogDirectory, configuration: simulatedConfiguration(disk.snapshot()))
        #expect(reference.statistics.liveKeys == statistics.liveKeys)
        #expect(reference.statistics.liveBytes == statistics.liveBytes)
        try await expectLog(reference, equals: model)
        try await reference.close()
    }

    /// Rewrites `INDEX` with `change` applied, its table's and header's
    /// CRCs recomputed: a forged file, not a damaged one.
    static func forge(_ disk: SimulatedFileSystem, _ change: (inout [UInt8]) -> Void) throws {
        let path = Self.checkpointPath
        var bytes = try #require(disk.contents(of: path))
        change(&bytes)
        // 64-byte header, 88-byte segment entries (Docs/FORMAT.md, "Index checkpoint").
        let tableEnd = min(bytes.count, 64 + 88 * Int(bytes[24..<28].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }))
        if tableEnd > 64 { put(CRC32.checksum(bytes[64..<tableEnd]), at: 48, in: &bytes) }
        put(CRC32.checksum(bytes[0..<60]), at: 60, in: &bytes)
        try disk.setContents(of: path, to: bytes)
    }

    static func put<T: FixedWidthInteger>(_ value: T, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<(T.bitWidth / 8) { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    @Test("a forged checkpoint whose counts would overflow, or whose table would take gigabytes, is refused without trapping")
    func forgedCounts() async throws {
        let forgeries: [(String, IndexCheckpointRejection, (inout [UInt8]) -> Void)] = [
            ("key count", .keySectionSizeImplausible, { Self.put(UInt64(1) << 59, at: 32, in: &$0) }),
            ("segment bytes", .segmentTableInconsistent, { Self.put(UInt64(Int64.max), at: 64 + 32, in: &$0) }),
            ("segment count", .fileSizeMismatch(0), { Self.put(UInt32.max, at: 24, in: &$0) }),
        ]
        for (what, expected, change) in forgeries {
            let disk = SimulatedFileSystem(directories: ["/data"])
            let model = try await Self.populated(disk)
            try Self.forge(disk, change)
            let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
            try await expectLog(log, equals: model, "\(what)")
            let rejected = log.recoveryReport.checkpointRejected
            if case .fileSizeMismatch = expected {
                guard case .fileSizeMismatch = rejected else { Issue.record("\(what): \(String(describing: rejected))"); continue }
            } else {
                #expect(rejected == expected, "\(what)")
            }
            try await log.close()
        }
    }
}
