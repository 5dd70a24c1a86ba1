import CLITestSupport
import Foundation
import OutboxLog
import SystemPackage
import Testing

/// The `outbox log` commands, run as real child processes of the built
/// `outbox` executable (`swift build --build-tests` builds it next to the
/// test bundle).
///
/// Serialized: a child process holds copies of this process's descriptors,
/// the LOCK file's included, from its fork until its exec (Foundation's
/// `Process` closes them one by one in the child first). A child spawned by
/// one test while another test has its log open could keep that log locked
/// for a moment after the other test closes it.
@Suite("Command-line tool", .serialized)
struct CommandLineToolTests {
    // MARK: append and dump

    @Test("append prints exactly N increasing sequence numbers, and dump --json returns those N records")
    func appendThenDump() async throws {
        let directory = TemporaryDirectory()
        let log = directory.appending("log").string
        let count = 7
        let size = 300

        let append = try await outbox(
            "log", "append", log, "--create", "--count", "\(count)", "--size", "\(size)", "--durability", "durable")
        #expect(append.status == 0)
        #expect(append.stderr.isEmpty)
        let sequences = append.stdoutLines.compactMap { UInt64($0) }
        #expect(sequences.count == count)
        #expect(append.stdoutLines.count == count)
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 })

        let dump = try await outbox("log", "dump", log, "--json")
        #expect(dump.status == 0)
        #expect(dump.stderr.isEmpty)
        let records = try dump.stdoutLines.map(jsonObject)
        #expect(records.count == count)
        for (index, record) in records.enumerated() {
            let key = "record-\(index)"
            #expect(record["key"] as? String == key)
            #expect(record["type"] as? String == "value")
            #expect((record["sequence"] as? NSNumber)?.uint64Value == sequences[safe: index])
            #expect((record["length"] as? NSNumber)?.intValue == size)
            let payload = try #require((record["payload"] as? String).flatMap { Data(base64Encoded: $0) })
            #expect([UInt8](payload) == expectedPayload(key: key, size: size))
            #expect(record["annotation"] == nil)
            #expect(record["keyBase64"] == nil)
        }

        // The same records, read back in-process.
        let reopened = try await OutboxLog.open(at: FilePath(log), configuration: testConfiguration())
        #expect(reopened.recoveryReport.isClean)
        for index in 0..<count {
            let entry = try await reopened.get(LogKey("record-\(index)"))
            #expect(entry?.value == expectedPayload(key: "record-\(index)", size: size))
            #expect(entry?.sequence == sequences[safe: index])
        }
        try await reopened.close()
    }

    @Test("append with a key prefix, empty payloads and buffered durability continues the sequence")
    func appendWithPrefixAndEmptyPayloads() async throws {
        let directory = TemporaryDirectory()
        let log = directory.path.string
        let first = try await outbox("log", "append", log, "--count", "3", "--size", "10", "--durability", "written")
        #expect(first.status == 0)
        let second = try await outbox(
            "log", "append", log, "--count", "4", "--size", "0", "--durability", "buffered", "--key-prefix", "empty/")
        #expect(second.status == 0)
        let firstSequences = first.stdoutLines.compactMap { UInt64($0) }
        let secondSequences = second.stdoutLines.compactMap { UInt64($0) }
        #expect(firstSequences.count == 3)
        #expect(secondSequences.count == 4)
        #expect(secondSequences.first ?? 0 > firstSequences.last ?? .max)

        let records = try await outbox("log", "dump", log, "--json").stdoutLines.map(jsonObject)
        #expect(records.map { $0["key"] as? String } == ["record-0", "record-1", "record-2", "empty/0", "empty/1", "empty/2", "empty/3"])
        #expect(records.suffix(4).allSatisfy { ($0["length"] as? NSNumber)?.intValue == 0 && $0["payload"] as? String == "" })

        let human = try await outbox("log", "dump", log)
        #expect(human.status == 0)
        #expect(human.stdoutLines.count == 7)
        #expect(human.stdoutLines.first?.contains("record-0") == true)
    }

    @Test("dump --json shows annotations, and keys that are not UTF-8 in base64")
    func dumpAnnotationsAndBinaryKeys() async throws {
        let directory = TemporaryDirectory()
        let binaryKey: [UInt8] = [0xFF, 0x00, 0xFE]
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        let valueSequence = try await log.put("annotated", [1, 2, 3], durability: .written)
        let annotationSequence = try await log.annotate("annotated", Array("sent".utf8), durability: .written)
        let binarySequence = try await log.put(LogKey(binaryKey), [9], durability: .written)
        try await log.close()

        let dump = try await outbox("log", "dump", directory.path.string, "--json")
        #expect(dump.status == 0)
        let records = try dump.stdoutLines.map(jsonObject)
        try #require(records.count == 2)
        #expect(records[0]["key"] as? String == "annotated")
        #expect((records[0]["sequence"] as? NSNumber)?.uint64Value == valueSequence)
        #expect(records[0]["payload"] as? String == Data([1, 2, 3]).base64EncodedString())
        #expect(records[0]["annotation"] as? String == Data("sent".utf8).base64EncodedString())
        #expect((records[0]["annotationSequence"] as? NSNumber)?.uint64Value == annotationSequence)
        #expect(records[1]["key"] == nil)
        #expect(records[1]["keyBase64"] as? String == Data(binaryKey).base64EncodedString())
        #expect((records[1]["sequence"] as? NSNumber)?.uint64Value == binarySequence)
        #expect((records[1]["length"] as? NSNumber)?.intValue == 1)
    }

    // MARK: verify

    @Test("verify exits 0 on a clean log and reports it in text and JSON")
    func verifyClean() async throws {
        let directory = TemporaryDirectory()
        try await writeRecords(50, to: directory.path)

        let text = try await outbox("log", "verify", directory.path.string)
        #expect(text.status == 0)
        #expect(text.stderr.isEmpty)
        #expect(text.stdoutLines.contains("clean"))

        let json = try await outbox("log", "verify", directory.path.string, "--json")
        #expect(json.status == 0)
        try #require(json.stdoutLines.count == 1)
        let report = try jsonObject(json.stdoutLines[0])
        #expect(report["clean"] as? Bool == true)
        #expect(report["readOnly"] as? Bool == true)
        #expect((report["liveKeys"] as? NSNumber)?.intValue == 50)
        #expect(report["truncatedTail"] is NSNull)
        #expect((report["skipped"] as? [Any])?.isEmpty == true)
        #expect(report["durationSeconds"] is NSNumber)
        for field in ["directory", "segments", "records", "bytes", "nextSequence", "setAsideFiles",
                      "interruptedCompaction", "removedTemporaryFiles"] {
            #expect(report[field] != nil, "missing \(field)")
        }
    }

    @Test("verify exits 1 on a torn tail and changes nothing on disk")
    func verifyTornTail() async throws {
        let directory = TemporaryDirectory()
        try await writeRecords(60, to: directory.path)
        let files = LogFiles(directory: directory.path)
        let newest = try #require(files.segments.last)
        files.write(files.read(newest) + [UInt8](repeating: 0xA5, count: 37), to: newest)
        let before = files.snapshot()

        let json = try await outbox("log", "verify", directory.path.string, "--json")
        #expect(json.status == 1)
        #expect(json.stderr.isEmpty)
        let report = try jsonObject(try #require(json.stdoutLines.first))
        #expect(report["clean"] as? Bool == false)
        let tail = try #require(report["truncatedTail"] as? [String: Any])
        #expect(tail["file"] as? String == newest.lastComponent?.string)
        #expect((tail["bytes"] as? NSNumber)?.intValue == 37)
        #expect(tail["reason"] is String)
        #expect(tail["damage"] as? String == "implausibleLength", "\(tail)")  // 0xA5 bytes: a length of 0xA5A5A5A5

        let text = try await outbox("log", "verify", directory.path.string)
        #expect(text.status == 1)
        #expect(text.stdout.contains("torn tail"))

        // dump still reads the intact records, with a one-line warning.
        let dump = try await outbox("log", "dump", directory.path.string, "--json")
        #expect(dump.status == 0)
        #expect(dump.stdoutLines.count == 60)
        #expect(dump.stderrLines.count == 1)
        #expect(dump.stderr.hasPrefix("warning: ") && dump.stderr.contains("torn tail"))
        #expect(files.snapshot() == before)
    }

    /// Writes 60 records to a log in `directory`, then flips a bit in the
    /// middle of its first segment, one of at least three (so a sealed one).
    /// Returns the log's files and that segment.
    func sixtyRecordsWithABitFlipInTheFirstSegment(_ directory: FilePath) async throws -> (LogFiles, FilePath) {
        try await writeRecords(60, to: directory)
        let files = LogFiles(directory: directory)
        try #require(files.segments.count >= 3)
        let sealed = files.segments[0]
        var bytes = files.read(sealed)
        bytes[bytes.count / 2] ^= 0x10
        files.write(bytes, to: sealed)
        return (files, sealed)
    }

    @Test("verify exits 1 after a bit flip in the middle of a sealed segment, and dump refuses the damaged log")
    func verifyBitFlipInSealedSegment() async throws {
        let directory = TemporaryDirectory()
        let (files, sealed) = try await sixtyRecordsWithABitFlipInTheFirstSegment(directory.path)
        let before = files.snapshot()

        let json = try await outbox("log", "verify", directory.path.string, "--json")
        #expect(json.status == 1)
        let report = try jsonObject(try #require(json.stdoutLines.first))
        #expect(report["clean"] as? Bool == false)
        let skipped = try #require(report["skipped"] as? [[String: Any]])
        #expect(skipped.contains { $0["file"] as? String == sealed.lastComponent?.string })
        #expect(files.snapshot() == before)

        let dump = try await outbox("log", "dump", directory.path.string)
        #expect(dump.status == 1)
        #expect(dump.stderrLines.count == 1)
        #expect(dump.stderr.hasPrefix("error: corruption: "))
    }

    @Test("dump --salvage serves the intact records past damage, exactly as many as verify counts")
    func dumpSalvageMatchesVerify() async throws {
        let directory = TemporaryDirectory()
        let (files, sealed) = try await sixtyRecordsWithABitFlipInTheFirstSegment(directory.path)
        let before = files.snapshot()

        let verify = try await outbox("log", "verify", directory.path.string, "--json")
        let report = try jsonObject(try #require(verify.stdoutLines.first))
        let dump = try await outbox("log", "dump", "--salvage", "--json", directory.path.string)
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.stdoutLines.count == report["liveKeys"] as? Int)
        #expect(dump.stdoutLines.count < 60)
        #expect(dump.stderr.contains("damaged range(s) skipped"))
        #expect(files.snapshot() == before)
    }

    @Test("verify --json prints the open's error as JSON when the log cannot be opened")
    func verifyJSONOpenFailure() async throws {
        let directory = TemporaryDirectory()
        try await writeRecords(10, to: directory.path)
        let files = LogFiles(directory: directory.path)
        let segment = files.segments[0]
        var bytes = files.read(segment)
        bytes[8] = 3  // version 3, with a valid header CRC
        bytes.replaceSubrange(44..<48, with: RawSegment.le(RawSegment.crc32(bytes[0..<44])))
        files.write(bytes, to: segment)

        let verify = try await outbox("log", "verify", "--json", directory.path.string)
        #expect(verify.status == 2)
        let object = try jsonObject(try #require(verify.stdoutLines.first))
        let error = try #require(object["error"] as? [String: Any])
        #expect(error["code"] as? String == "unsupported format")
        #expect(error["file"] as? String == segment.string)
        #expect(error["offset"] as? Int == 8)
        #expect(verify.stderr.hasPrefix("error: unsupported format: "))
    }

    @Test("append --segment-size rolls small logs into many segments, and --batch writes atomic batches")
    func appendSegmentSizeAndBatch() async throws {
        let directory = TemporaryDirectory()
        let append = try await outbox(
            "log", "append", directory.path.string, "--create", "--count", "50", "--size", "200", "--durability", "durable",
            "--segment-size", "4096", "--batch", "4")
        #expect(append.status == 0, "\(append.stderr)")
        #expect(append.stdoutLines == (1...50).map(String.init))
        let files = LogFiles(directory: directory.path)
        #expect(files.segments.count >= 3)
        // Every 4 records share one batch: FIRST, MIDDLE, MIDDLE, LAST flags.
        let first = files.read(files.segments[0])
        #expect(Array(first[(48 + 9)...(48 + 9)]) == [1])
        let verify = try await outbox("log", "verify", directory.path.string)
        #expect(verify.status == 0, "\(verify.stdout)")

        let bad = try await outbox(
            "log", "append", directory.path.string, "--count", "1", "--size", "1", "--durability", "durable",
            "--segment-size", "100")
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--segment-size"))
    }

    @Test("every log command takes a bare relative directory name")
    func relativeDirectory() async throws {
        let directory = TemporaryDirectory()
        let cwd = directory.path.string
        let append = try await OutboxTool.run(
            ["log", "append", "lg", "--create", "--count", "3", "--size", "16", "--durability", "durable"],
            currentDirectory: cwd)
        #expect(append.status == 0, "\(append.stderr)")
        #expect(append.stdoutLines.count == 3)
        #expect(FileManager.default.fileExists(atPath: cwd + "/lg/LOCK"))
        for command in [["log", "verify", "lg"], ["log", "dump", "lg"], ["log", "stats", "lg"], ["log", "compact", "lg"]] {
            let result = try await OutboxTool.run(command, currentDirectory: cwd)
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
        let reopened = try await OutboxLog.open(at: directory.appending("lg"), configuration: testConfiguration())
        #expect(reopened.keys.count == 3)
        try await reopened.close()
    }

    @Test("append --create where a file is in the way fails with one line and creates nothing")
    func createBlockedByAFile() async throws {
        let directory = TemporaryDirectory()
        FileManager.default.createFile(atPath: directory.path.string + "/blocker", contents: Data([1]))
        let result = try await OutboxTool.run(
            ["log", "append", "blocker/parent/lg", "--create", "--count", "1", "--size", "1", "--durability", "durable"],
            currentDirectory: directory.path.string)
        #expect(result.status == 2)
        #expect(result.stderrLines.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path.string) == ["blocker"])
    }

    @Test("verify exits 2 with one line on stderr for a missing directory (and, with --json, the error as JSON), and creates nothing")
    func verifyMissingDirectory() async throws {
        let directory = TemporaryDirectory()
        let missing = directory.appending("missing")
        for arguments in [["log", "verify", missing.string], ["log", "verify", missing.string, "--json"]] {
            let result = try await outbox(arguments)
            #expect(result.status == 2)
            if arguments.contains("--json") {
                let line = try #require(result.stdoutLines.first)
                let error = try #require(try jsonObject(line)["error"] as? [String: Any])
                #expect(error["code"] as? String == "not found")
            } else {
                #expect(result.stdout.isEmpty)
            }
            #expect(result.stderrLines.count == 1)
            #expect(result.stderr.hasPrefix("error: not found: "))
        }
        #expect(!FileManager.default.fileExists(atPath: missing.string))
    }

    // MARK: locking

    @Test("a log held open by this process is locked for the tool until it is closed")
    func crossProcessLockContention() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path.string
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        try await log.put("held", [1], durability: .durable)

        for command in ["append", "verify"] {
            let arguments = command == "append"
                ? ["log", "append", path, "--count", "1", "--size", "8", "--durability", "durable"]
                : ["log", "verify", path]
            let locked = try await outbox(arguments)
            #expect(locked.status == 2, "\(command): a locked log could not be opened")
            #expect(locked.stdout.isEmpty, "\(command)")
            #expect(locked.stderrLines.count == 1, "\(command)")
            #expect(locked.stderr.contains("locked"), "\(command)")
        }

        try await log.close()
        let append = try await outbox("log", "append", path, "--count", "2", "--size", "8", "--durability", "durable")
        #expect(append.status == 0)
        #expect(append.stderr.isEmpty)
        #expect(append.stdoutLines.compactMap { UInt64($0) }.count == 2)
    }

    @Test(
        "a refused second open (or destroy) in this process leaves the lock held: another process is still refused",
        arguments: ["open", "destroy", "open read-only"])
    func refusedSecondOpenKeepsTheLock(_ attempt: String) async throws {
        let directory = TemporaryDirectory()
        let path = directory.path.string
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        try await log.put("held", [1], durability: .durable)

        // POSIX record locks belong to the process: closing *any* descriptor
        // of LOCK would drop them. A refused attempt must not do that.
        for _ in 0..<3 {
            await #expect {
                switch attempt {
                case "destroy":
                    try await OutboxLog.destroy(at: directory.path)
                case "open read-only":
                    var configuration = testConfiguration()
                    configuration.readOnly = true
                    _ = try await OutboxLog.open(at: directory.path, configuration: configuration)
                default:
                    _ = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
                }
            } throws: { error in
                (error as? OutboxLogError)?.code == .locked
            }
        }

        let other = try await outbox("log", "append", path, "--count", "1", "--size", "8", "--durability", "durable")
        #expect(other.status == 2, "another process opened a log this process holds: \(other.stdout)")
        #expect(other.stderr.contains("locked"))
        let verify = try await outbox("log", "verify", path)
        #expect(verify.status == 2)
        #expect(verify.stderr.contains("locked"))
        #expect(try await log.get("held")?.value == [1])

        try await log.close()
        let after = try await outbox("log", "append", path, "--count", "1", "--size", "8", "--durability", "durable")
        #expect(after.status == 0, "\(after.stderr)")
    }

    @Test("PosixFileSystem: closing another descriptor of a locked file keeps the lock; releasing it closes both")
    func closingAnotherDescriptorKeepsTheLock() async throws {
        let directory = TemporaryDirectory()
        let fileSystem = PosixFileSystem()
        let lockFile = directory.appending("LOCK")
        let holder = try fileSystem.openAndLock(lockFile)
        #expect(throws: Errno.wouldBlock) { _ = try fileSystem.openAndLock(lockFile) }
        for _ in 0..<2 {
            let reader = try fileSystem.openFile(lockFile, mode: .readOnly)
            #expect(throws: Errno.wouldBlock) { try fileSystem.lockExclusively(reader) }
            try fileSystem.close(reader)
        }
        let refused = try await outbox("log", "verify", directory.path.string)
        #expect(refused.status == 2 && refused.stderr.contains("locked"), "\(refused.stderr)")

        try fileSystem.close(holder)
        let allowed = try await outbox("log", "verify", directory.path.string)
        #expect(allowed.status == 0, "\(allowed.stderr)")
        let again = try fileSystem.openAndLock(lockFile)
        try fileSystem.close(again)
    }

    // MARK: arguments

    @Test(
        "bad arguments exit 64 with one line on stderr and touch nothing",
        arguments: [
            ["--count", "0", "--size", "8", "--durability", "durable"],
            ["--count", "1", "--size", "8", "--durability", "eventually"],
            ["--count", "1", "--size", "-1", "--durability", "written"],
            ["--count", "1", "--size", "\(16 << 20)", "--durability", "written"],
            ["--count", "1", "--durability", "written"],
            ["--count", "1", "--size", "8", "--durability", "written", "--bogus"],
        ])
    func badArguments(_ options: [String]) async throws {
        let directory = TemporaryDirectory()
        let log = directory.appending("log")
        let result = try await outbox(["log", "append", log.string, "--create"] + options)
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.hasPrefix("error: "))
        #expect(!FileManager.default.fileExists(atPath: log.string))
    }

    @Test("an empty directory argument is rejected")
    func emptyDirectory() async throws {
        let result = try await outbox("log", "stats", "")
        #expect(result.status == 64)
        #expect(result.stderrLines == ["error: the log directory must not be empty"])
    }

    @Test("append does not create a missing directory without --create")
    func appendNeedsCreate() async throws {
        let directory = TemporaryDirectory()
        let log = directory.appending("log")
        let result = try await outbox("log", "append", log.string, "--count", "1", "--size", "1", "--durability", "written")
        #expect(result.status == 2)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.contains("--create"))
        #expect(!FileManager.default.fileExists(atPath: log.string))
    }

    // MARK: compact and stats

    @Test("compact shrinks a log full of overwritten keys and keeps the latest values")
    func compactShrinksOverwrittenLog() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var latest: [String: [UInt8]] = [:]
        for round in 0..<100 {
            for key in 0..<5 {
                let value = [UInt8].pattern(200, seed: round * 5 + key)
                try await log.put(LogKey("key-\(key)"), value, durability: .buffered)
                latest["key-\(key)"] = value
            }
        }
        try await log.close()
        let files = LogFiles(directory: directory.path)
        let bytesBefore = files.segments.reduce(0) { $0 + files.read($1).count }

        let statsBefore = try jsonObject(try #require(try await outbox("log", "stats", directory.path.string, "--json").stdoutLines.first))
        #expect((statsBefore["deadRatio"] as? NSNumber)?.doubleValue ?? 0 > 0.9)

        let compact = try await outbox("log", "compact", directory.path.string)
        #expect(compact.status == 0)
        #expect(compact.stderr.isEmpty)
        #expect(compact.stdout.hasPrefix("compacted "))
        let bytesAfter = files.segments.reduce(0) { $0 + files.read($1).count }
        #expect(bytesAfter * 10 < bytesBefore)

        let stats = try await outbox("log", "stats", directory.path.string, "--json")
        #expect(stats.status == 0)
        let statistics = try jsonObject(try #require(stats.stdoutLines.first))
        #expect((statistics["liveKeys"] as? NSNumber)?.intValue == 5)
        #expect((statistics["totalBytes"] as? NSNumber)?.intValue == bytesAfter)

        let records = try await outbox("log", "dump", directory.path.string, "--json").stdoutLines.map(jsonObject)
        #expect(records.count == 5)
        for record in records {
            let key = try #require(record["key"] as? String)
            let payload = try #require((record["payload"] as? String).flatMap { Data(base64Encoded: $0) })
            #expect([UInt8](payload) == latest[key])
        }
    }

    @Test("stats reports the segments, bytes and live keys on disk")
    func statsMatchesDisk() async throws {
        let directory = TemporaryDirectory()
        try await writeRecords(60, to: directory.path)
        let files = LogFiles(directory: directory.path)
        let segmentBytes = files.segments.reduce(0) { $0 + files.read($1).count }

        let json = try await outbox("log", "stats", directory.path.string, "--json")
        #expect(json.status == 0)
        #expect(json.stderr.isEmpty)
        let statistics = try jsonObject(try #require(json.stdoutLines.first))
        #expect((statistics["segments"] as? NSNumber)?.intValue == files.segments.count)
        #expect((statistics["totalBytes"] as? NSNumber)?.intValue == segmentBytes)
        #expect((statistics["liveBytes"] as? NSNumber)?.intValue == 60 * frameSize(key: "key-10", payload: 150) - 10 * 1)
        #expect((statistics["liveKeys"] as? NSNumber)?.intValue == 60)
        #expect(((statistics["nextSequence"] as? NSNumber)?.uint64Value ?? 0) > 60)
        for field in ["deadBytes", "deadRatio", "writtenSequence", "durableSequence", "pendingBytes", "syncs",
                      "compactions", "directory"] {
            #expect(statistics[field] != nil, "missing \(field)")
        }

        let text = try await outbox("log", "stats", directory.path.string)
        #expect(text.status == 0)
        #expect(text.stdoutLines.contains { $0.hasPrefix("live keys") && $0.hasSuffix(" 60") })
    }
}

// MARK: - Helpers

extension CommandLineToolTests {
    typealias ToolRun = OutboxTool.Run

    func outbox(_ arguments: String...) async throws -> ToolRun { try await OutboxTool.run(arguments) }

    func outbox(_ arguments: [String]) async throws -> ToolRun { try await OutboxTool.run(arguments) }

    /// Parses one line of JSON output as an object.
    func jsonObject(_ line: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not an object: \(line)")
    }

    /// The payload `outbox log append` writes for `key`: "<key>." repeated, cut to `size` bytes.
    func expectedPayload(key: String, size: Int) -> [UInt8] {
        let unit = Array((key + ".").utf8)
        return (0..<size).map { unit[$0 % unit.count] }
    }

    /// Writes `count` keys of 150 bytes into 4 KiB segments (no automatic
    /// compaction) and closes the log.
    func writeRecords(_ count: Int, to directory: FilePath) async throws {
        let log = try await OutboxLog.open(at: directory, configuration: smallSegments(4096))
        for index in 0..<count {
            try await log.put(LogKey("key-\(index)"), .pattern(150, seed: index), durability: .written)
        }
        try await log.close()
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
