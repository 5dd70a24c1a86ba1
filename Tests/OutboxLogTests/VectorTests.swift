import CLITestSupport
import Foundation
import OutboxLog
import SystemPackage
import Testing

/// The format's test vectors (Tests/Vectors, see its README.md): the engine
/// must read every one as its expected.json says, and the generator must
/// still write exactly these bytes, so a change to the format, to what
/// recovery reports or to what dump serves cannot go unnoticed.
@Suite("Format test vectors")
struct VectorTests {
    static let vectors = VectorFolder(
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Vectors"),
        filesFolder: "log")
    static let folder = vectors.url
    static let names = vectors.names

    static func expected(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: folder.appendingPathComponent("\(name)/expected.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// A scratch copy of the vector's log (an open creates `LOCK`).
    static func copy(_ name: String) throws -> TemporaryDirectory {
        let directory = TemporaryDirectory("outbox-vector")
        let source = folder.appendingPathComponent("\(name)/log").path
        // Git keeps no empty directory: a vector without `log/` is an empty log.
        guard FileManager.default.fileExists(atPath: source) else { return directory }
        for file in try FileManager.default.contentsOfDirectory(atPath: source) {
            try FileManager.default.copyItem(atPath: source + "/" + file, toPath: directory.appending(file).string)
        }
        return directory
    }

    static func open(_ directory: TemporaryDirectory, salvage: Bool) async throws -> OutboxLog {
        var configuration = testConfiguration(salvage ? .salvage : .strict)
        configuration.readOnly = true
        configuration.createIfMissing = false
        return try await OutboxLog.open(at: directory.path, configuration: configuration)
    }

    @Test("the folder holds every kind of vector")
    func vectorsArePresent() {
        #expect(Self.names.count >= 50, "found \(Self.names.count) vectors in \(Self.folder.path)")
        for prefix in ["clean-", "compaction-", "torn-tail-", "frame-", "header-", "batch-", "chain-"] {
            #expect(Self.names.contains { $0.hasPrefix(prefix) }, "no \(prefix)* vector")
        }
    }

    @Test("the engine reads each vector as expected.json says", arguments: names)
    func engineReadsVector(_ name: String) async throws {
        let expected = try Self.expected(name)
        let verify = try #require(expected["verify"] as? [String: Any])
        let json = try #require(verify["json"] as? [String: Any])
        let directory = try Self.copy(name)

        // The strict read-only open (`outbox log dump`).
        let strict = try #require(expected["strict"] as? [String: Any])
        do {
            let log = try await Self.open(directory, salvage: false)
            try await log.close()
            #expect(strict["ok"] as? Bool == true, "\(name): the strict open succeeded, expected \(strict)")
        } catch let error as OutboxLogError {
            let wanted = try #require(strict["error"] as? [String: Any], "\(name): unexpected \(error)")
            #expect(wanted["code"] as? String == "\(error.code)", "\(name): \(error)")
            #expect(wanted["file"] as? String == error.file?.lastComponent?.string, "\(name): \(error)")
            #expect((wanted["offset"] as? Int).map(Int64.init) == error.offset, "\(name): \(error)")
        }

        // The read-only salvage open (`outbox log verify`, `dump --salvage`).
        let log: OutboxLog
        do {
            log = try await Self.open(directory, salvage: true)
        } catch let error as OutboxLogError {
            let wanted = try #require(json["error"] as? [String: Any], "\(name): unexpected \(error)")
            #expect(wanted["code"] as? String == "\(error.code)", "\(name): \(error)")
            #expect(wanted["file"] as? String == error.file?.lastComponent?.string, "\(name): \(error)")
            return
        }
        let report = log.recoveryReport
        #expect(report.segments == json["segments"] as? Int, "\(name): \(report)")
        #expect(report.records == json["records"] as? Int, "\(name): \(report)")
        #expect(report.liveKeys == json["liveKeys"] as? Int, "\(name): \(report)")
        #expect(Int(report.nextSequence) == json["nextSequence"] as? Int, "\(name): \(report)")
        #expect(report.isClean == json["clean"] as? Bool, "\(name): \(report)")
        #expect(report.interruptedCompaction?.rawValue == json["interruptedCompaction"] as? String, "\(name): \(report)")
        #expect(report.removedTemporaryFiles == json["removedTemporaryFiles"] as? [String], "\(name): \(report)")
        let skipped = try #require(json["skipped"] as? [[String: Any]])
        #expect(
            report.skipped.map { "\($0.file)@\($0.offset)+\($0.bytes)" }
                == skipped.map { "\($0["file"]!)@\($0["offset"]!)+\($0["bytes"]!)" }, "\(name): \(report)")
        let tail = json["truncatedTail"] as? [String: Any]
        #expect(report.truncatedTail?.file == tail?["file"] as? String, "\(name): \(report)")
        #expect(report.truncatedTail.map { Int($0.offset) } == tail?["offset"] as? Int, "\(name): \(report)")
        #expect(report.truncatedTail?.unreachableRecords == tail?["unreachableRecords"] as? Int, "\(name): \(report)")

        // What a read serves is what verify counts, and what dump printed.
        var entries: [LogEntry] = []
        for try await entry in log.allEntries() { entries.append(entry) }
        try await log.close()
        #expect(entries.count == report.liveKeys, "\(name)")
        let dumped = try #require((expected["dump"] as? [String: Any])?["entries"] as? [[String: Any]])
        #expect(entries.count == dumped.count, "\(name)")
        for (entry, wanted) in zip(entries, dumped) {
            #expect(Int(entry.sequence) == wanted["sequence"] as? Int, "\(name)")
            let key = (wanted["key"] as? String).map { Array($0.utf8) }
                ?? (wanted["keyBase64"] as? String).flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) }
            #expect(entry.key.bytes == key, "\(name)")
            #expect(Data(entry.value).base64EncodedString() == wanted["payload"] as? String, "\(name) \(entry.key)")
            #expect(entry.annotation.map { Data($0.payload).base64EncodedString() } == wanted["annotation"] as? String, "\(name)")
        }
    }

    @Test("outbox log make-vectors writes exactly the checked-in vectors")
    func generatorReproducesVectors() async throws {
        try await Self.vectors.expectGeneratorReproduces(["log", "make-vectors"], readme: "Tests/Vectors/README.md")
    }
}
