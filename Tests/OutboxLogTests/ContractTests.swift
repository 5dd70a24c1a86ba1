import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// What the public API promises: bad input changes nothing, one opener at a
/// time, read-only means read-only, and damage is never dropped silently.
@Suite("API contract")
struct ContractTests {
    @Test("a second open of the same directory in this process is refused until the first closes")
    func oneOpenerAtATime() async throws {
        let directory = TemporaryDirectory()
        let first = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        await #expect { try await OutboxLog.open(at: directory.path, configuration: testConfiguration()) } throws: { error in
            (error as? OutboxLogError)?.code == .locked
        }
        try await first.close()
        let second = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        try await second.close()
    }

    @Test("every file the log creates is private to its owner: files 0600, directories 0700")
    func privateFiles() async throws {
        let root = TemporaryDirectory()
        let directory = root.path.appending("log")
        let log = try await OutboxLog.open(at: directory, configuration: smallSegments())
        for i in 0..<60 { try await log.put(LogKey("k\(i % 7)"), .pattern(200, seed: i), durability: .written) }
        _ = try await log.compact()
        try await log.close()
        func mode(_ path: String) throws -> Int {
            try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        }
        #expect(try mode(directory.string) == 0o700)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.string)
        #expect(names.count > 1)
        for name in names {
            let path = directory.string + "/" + name
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            #expect(try mode(path) == (isDirectory.boolValue ? 0o700 : 0o600), "\(name)")
        }
    }

    @Test("invalid appends fail with a typed error and write nothing")
    func badInputWritesNothing() async throws {
        let directory = TemporaryDirectory()
        var configuration = testConfiguration()
        configuration.maximumRecordSize = 1024
        let log = try await OutboxLog.open(at: directory.path, configuration: configuration)
        try await log.put("existing", [1], durability: .durable)
        let before = log.statistics

        func expectRejected(_ code: OutboxLogError.Code, _ body: () async throws -> Void) async {
            do {
                try await body()
                Issue.record("expected \(code)")
            } catch {
                #expect((error as? OutboxLogError)?.code == code, "\(error)")
            }
        }
        await expectRejected(.recordTooLarge) { try await log.put("big", .pattern(2000, seed: 1), durability: .durable) }
        await expectRejected(.invalidArgument) {
            try await log.put(LogKey([UInt8](repeating: 65, count: LogKey.maximumLength + 1)), [1], durability: .durable)
        }
        await expectRejected(.invalidArgument) { try await log.annotate("absent", [1], durability: .durable) }
        await expectRejected(.invalidArgument) { try await log.append([], durability: .durable) }
        // A batch whose second record is bad writes neither.
        await expectRejected(.recordTooLarge) {
            try await log.append([.value("first", [1]), .value("second", .pattern(5000, seed: 2))], durability: .durable)
        }
        await expectRejected(.invalidArgument) {
            try await log.append([.tombstone("x"), .annotation("x", [1])], durability: .durable)
        }
        let after = log.statistics
        #expect(after.nextSequence == before.nextSequence)
        #expect(after.totalBytes == before.totalBytes)
        #expect(log.keys == ["existing"])
        try await log.close()
    }

    @Test("a batch of more than 4 GiB is refused with a typed error, writes nothing, and the log stays usable")
    func hugeBatch() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        try await log.put("existing", [1], durability: .durable)
        let before = log.statistics
        // 4,200 records of 1 MiB sharing one buffer: 4.1 GiB in the batch,
        // 1 MiB in memory (unless something copies them).
        let payload = [UInt8](repeating: 7, count: 1 << 20)
        let batch = (0..<4200).map { LogWrite.value(LogKey("big-\($0)"), payload) }
        await #expect {
            try await log.append(batch, durability: .durable)
        } throws: { error in
            let error = error as? OutboxLogError
            return error?.code == .invalidArgument && error?.message.contains("\(OutboxLog.Configuration.absoluteMaximumBatchSize)") == true
        }
        #expect(throws: OutboxLogError.self) { _ = try log.submit(batch) }
        let after = log.statistics
        #expect(after.nextSequence == before.nextSequence)
        #expect(after.pendingBytes == 0)
        #expect(log.keys == ["existing"])
        try await log.put("next", [2], durability: .durable)
        #expect(try await log.get("next")?.value == [2])
        try await log.close()
    }

    @Test("out-of-range arguments and settings get a typed error and change nothing")
    func outOfRangeArguments() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        try await log.put("k", [1], durability: .durable)
        for limit in [0, -1, Int.min] {
            await #expect { _ = try await log.entries(after: 0, limit: limit) } throws: { error in
                (error as? OutboxLogError)?.code == .invalidArgument
            }
        }
        await #expect {
            for try await _ in log.allEntries(pageSize: 0) {}
        } throws: { error in
            (error as? OutboxLogError)?.code == .invalidArgument
        }
        #expect(try await log.entries(after: 0, limit: 1).map(\.key) == ["k"])
        try await log.close()

        var settings: [(String, OutboxLog.Configuration)] = []
        func setting(_ name: String, _ change: (inout OutboxLog.Configuration) -> Void) {
            var configuration = testConfiguration()
            change(&configuration)
            settings.append((name, configuration))
        }
        setting("NaN compaction ratio") { $0.automaticCompactionRatio = .nan }
        setting("negative compaction ratio") { $0.automaticCompactionRatio = -0.5 }
        setting("negative compaction minimum") { $0.automaticCompactionMinimumBytes = -1 }
        setting("tiny segments") { $0.segmentSize = 100 }
        setting("huge records") { $0.maximumRecordSize = Int.max }
        setting("no readers") { $0.readerThreads = 0 }
        setting("negative pending bytes") { $0.maximumPendingBytes = -1 }
        for (name, configuration) in settings {
            await #expect("\(name)") {
                _ = try await OutboxLog.open(at: directory.path, configuration: configuration)
            } throws: { error in
                (error as? OutboxLogError)?.code == .invalidArgument
            }
        }
        await #expect {
            _ = try await OutboxLog.open(at: FilePath(""), configuration: testConfiguration())
        } throws: { error in
            (error as? OutboxLogError)?.code == .invalidArgument
        }
        let reopened = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        #expect(try await reopened.get("k")?.value == [1])
        try await reopened.close()
    }

    @Test(
        "an open that creates the directory (and its parents) and then fails leaves nothing behind",
        arguments: [
            (FileSystemOperation.synchronizeDirectory, 1), (.synchronizeDirectory, 3), (.createDirectory, 2), (.openFile, 1),
        ])
    func failedCreateLeavesNothing(_ failing: FileSystemOperation, _ call: Int) async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let directory: FilePath = "/data/new/parent/log"
        disk.faults.install(FaultRule(failing: failing, trigger: .call(call), repetition: .once, effect: .fail(.noSpace)))
        await #expect {
            _ = try await OutboxLog.open(at: directory, configuration: simulatedConfiguration(disk))
        } throws: { error in
            (error as? OutboxLogError)?.code == .io
        }
        #expect(disk.faults.injectedFaults.count == 1)
        #expect(try disk.itemKind(at: "/data/new") == nil, "\(disk.allDirectories())")
        // The next open creates it for good.
        let log = try await OutboxLog.open(at: directory, configuration: simulatedConfiguration(disk))
        try await log.put("k", [1], durability: .durable)
        try await log.close()
        #expect(disk.isDurable(directory))
    }

    @Test("annotations change without rewriting the value, die with it, and survive reopen and compaction")
    func annotations() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        try await log.put("entry", .pattern(200, seed: 1), durability: .written)
        for attempt in 1...5 { try await log.annotate("entry", [UInt8(attempt)], durability: .written) }
        var entry = try #require(try await log.get("entry"))
        #expect(entry.value == .pattern(200, seed: 1))
        #expect(entry.annotation?.payload == [5])
        #expect(try #require(entry.annotation).sequence > entry.sequence)

        // A new value starts without an annotation; a batch can set both.
        try await log.put("entry", [9], durability: .written)
        #expect(try await log.get("entry")?.annotation == nil)
        try await log.append([.value("pair", [1]), .annotation("pair", [2])], durability: .durable)
        try await log.compact()
        try await log.close()

        let reopened = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        entry = try #require(try await reopened.get("pair"))
        #expect(entry.value == [1])
        #expect(entry.annotation?.payload == [2])
        #expect(try await reopened.get("entry")?.value == [9])
        #expect(try await reopened.delete("pair", durability: .durable) != nil)
        #expect(try await reopened.get("pair") == nil)
        #expect(try await reopened.delete("pair", durability: .durable) == nil)
        try await reopened.close()
    }

    @Test("entries come back in sequence order, page by page")
    func orderedPages() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        for i in 0..<100 { try await log.put(LogKey("k\(i % 30)"), .pattern(50, seed: i), durability: .buffered) }
        var seen: [LogEntry] = []
        var after: UInt64 = 0
        while true {
            let page = try await log.entries(after: after, limit: 7)
            if page.isEmpty { break }
            seen += page
            after = page.last!.sequence
        }
        #expect(seen.count == 30)
        #expect(seen.map(\.sequence) == seen.map(\.sequence).sorted())
        #expect(Set(seen.map(\.key)) == Set(log.keys))
        var streamed: [LogKey] = []
        for try await entry in log.allEntries(pageSize: 4) { streamed.append(entry.key) }
        #expect(streamed == seen.map(\.key))
        try await log.close()
    }

    @Test("a read-only open refuses writes and changes nothing on disk, even with a torn tail")
    func readOnly() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        for i in 0..<10 { try await log.put(LogKey("k\(i)"), .pattern(30, seed: i), durability: .written) }
        try await log.close()
        let files = LogFiles(directory: directory.path)
        let segment = try #require(files.segments.last)
        files.write(files.read(segment) + [1, 2, 3, 4, 5], to: segment)  // a torn tail
        let before = files.snapshot()

        var configuration = testConfiguration()
        configuration.readOnly = true
        let reader = try await OutboxLog.open(at: directory.path, configuration: configuration)
        #expect(reader.recoveryReport.truncatedTail != nil)
        #expect(reader.recoveryReport.readOnly)
        #expect(reader.keys.count == 10)
        #expect(try await reader.get("k3")?.value == .pattern(30, seed: 3))
        await #expect(throws: OutboxLogError.self) { try await reader.put("x", [1], durability: .buffered) }
        await #expect(throws: OutboxLogError.self) { try await reader.compact() }
        try await reader.close()
        #expect(files.snapshot() == before)
    }

    @Test("a segment written by a newer format version fails the open and nothing is modified")
    func unknownFormatVersion() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        for i in 0..<60 { try await log.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: .written) }
        try await log.close()
        let files = LogFiles(directory: directory.path)
        let newest = try #require(files.segments.last)
        var bytes = files.read(newest)
        bytes[8] = 3  // format version 3
        let crc = CRC32.checksum(bytes[0..<44])
        withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { bytes[44 + i] = $0[i] } }
        files.write(bytes + [0xFF, 0xFF], to: newest)  // and a torn tail that must not be cut
        let before = files.snapshot()

        await #expect { try await OutboxLog.open(at: directory.path, configuration: smallSegments()) } throws: { error in
            let error = error as? OutboxLogError
            return error?.code == .unsupportedFormat && error?.file == newest
        }
        #expect(files.snapshot() == before)
    }

    @Test("damage in the middle fails the open with file and offset; salvage keeps every intact record and moves the file aside")
    func midLogDamage() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var sequences: [UInt64: LogKey] = [:]
        var values: [LogKey: [UInt8]] = [:]
        for i in 0..<150 {
            let key = LogKey("k\(i)")
            values[key] = .pattern(60, seed: i)
            sequences[try await log.put(key, values[key]!, durability: .written)] = key
        }
        try await log.close()
        let files = LogFiles(directory: directory.path)
        #expect(files.segments.count >= 3)
        let damaged = files.segments[1]
        let firstSequence = try #require(UInt64(damaged.lastComponent!.stem))
        let damagedKey = try #require(sequences[firstSequence])
        var bytes = files.read(damaged)
        bytes[segmentHeaderSize + 28 + 5] ^= 0x40  // inside the first record
        files.write(bytes, to: damaged)
        let before = files.snapshot()

        await #expect { try await OutboxLog.open(at: directory.path, configuration: smallSegments()) } throws: { error in
            let error = error as? OutboxLogError
            return error?.code == .corruption && error?.file == damaged && error?.offset == Int64(segmentHeaderSize)
        }
        #expect(files.snapshot() == before)

        var salvage = smallSegments()
        salvage.recoveryMode = .salvage
        let salvaged = try await OutboxLog.open(at: directory.path, configuration: salvage)
        let report = salvaged.recoveryReport
        #expect(report.setAsideFiles == [damaged.lastComponent!.string])
        #expect(report.skipped.contains { $0.file == damaged.lastComponent!.string && $0.offset == Int64(segmentHeaderSize) })
        #expect(Set(salvaged.keys) == Set(values.keys).subtracting([damagedKey]))
        for key in salvaged.keys { #expect(try await salvaged.get(key)?.value == values[key]) }
        try await salvaged.close()
        #expect(FileManager.default.fileExists(atPath: directory.appending("damaged").appending(damaged.lastComponent!.string).string))

        let strict = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        #expect(strict.recoveryReport.isClean, "\(strict.recoveryReport)")
        #expect(strict.keys.count == values.count - 1)
        try await strict.close()
    }

    @Test("a deleted segment in the middle is detected, never silently skipped")
    func deletedSegment() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        for i in 0..<150 { try await log.put(LogKey("k\(i)"), .pattern(60, seed: i), durability: .written) }
        try await log.close()
        let files = LogFiles(directory: directory.path)
        let missing = files.segments[1]
        try FileManager.default.removeItem(atPath: missing.string)

        await #expect { try await OutboxLog.open(at: directory.path, configuration: smallSegments()) } throws: { error in
            let error = error as? OutboxLogError
            if case .missingSequences? = error?.damage { return error?.code == .corruption }
            return false
        }
        var salvage = smallSegments()
        salvage.recoveryMode = .salvage
        let salvaged = try await OutboxLog.open(at: directory.path, configuration: salvage)
        #expect(salvaged.recoveryReport.skipped.contains { if case .missingSequences = $0.damage { true } else { false } })
        #expect(!salvaged.recoveryReport.isClean)
        try await salvaged.close()
    }

    @Test("every record's CRC is checked when it is read back, not only at open")
    func readVerifiesChecksums() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        try await log.put("victim", .pattern(100, seed: 1), durability: .durable)
        let files = LogFiles(directory: directory.path)
        let segment = try #require(files.segments.first)
        let position = segmentHeaderSize + 28 + 6 + 50  // in the payload, behind the log's back
        try files.overwrite(segment, at: position, with: [files.read(segment)[position] ^ 1])
        await #expect { _ = try await log.get("victim") } throws: { error in
            (error as? OutboxLogError)?.code == .corruption
        }
        try await log.close()
    }
}
