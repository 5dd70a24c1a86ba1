import Foundation
import Logging
import OutboxLog
import SystemPackage

/// A log directory's files by name (the `LOCK` file left out).
typealias VectorFiles = [String: [UInt8]]

/// The logs the vectors start from, written by the engine through its
/// public API, then given deterministic salts so that generating the
/// vectors again gives the same bytes.
enum VectorLogs {
    static func configuration(segmentSize: Int = 4096) -> OutboxLog.Configuration {
        var configuration = OutboxLog.Configuration()
        configuration.segmentSize = segmentSize
        configuration.automaticCompactionRatio = nil
        // No space allocated ahead: the bytes must not depend on when the
        // writer was idle (the allocated-ahead cases add zeros themselves).
        configuration.preallocation = 0
        configuration.logger = Logger(label: "outbox.vectors", factory: { _ in SwiftLogNoOpLogHandler() })
        return configuration
    }

    /// Runs `body` on a new log in a scratch directory, closes it, and returns its files.
    static func write(
        segmentSize: Int = 4096, startingFrom files: VectorFiles = [:], _ body: (OutboxLog) async throws -> Void
    ) async throws -> VectorFiles {
        let directory = try Scratch()
        defer { directory.remove() }
        try store(files, in: directory.path)
        let log = try await OutboxLog.open(at: FilePath(directory.path), configuration: configuration(segmentSize: segmentSize))
        try await body(log)
        try await log.close()
        return try load(directory.path)
    }

    static func payload(_ text: String, size: Int) -> [UInt8] {
        let unit = Array((text + ".").utf8)
        return (0..<size).map { unit[$0 % unit.count] }
    }

    /// One segment: values, annotations, a tombstone, an atomic batch, a
    /// key that is not UTF-8, an overwritten value, then two lone records.
    static func standard() async throws -> VectorFiles {
        try await write { log in
            for index in 0..<8 { try await log.put(LogKey("key-\(index)"), payload("key-\(index)", size: 12 + index), durability: .durable) }
            try await log.annotate("key-1", Array("sent once".utf8), durability: .durable)
            try await log.annotate("key-2", Array("sent twice".utf8), durability: .durable)
            try await log.delete("key-3", durability: .durable)
            try await log.append(
                (0..<3).map { LogWrite.value(LogKey("batch-\($0)"), payload("batch-\($0)", size: 20)) }, durability: .durable)
            try await log.put(LogKey([0xFF, 0x00, 0x7F]), [1, 2, 3], durability: .durable)
            try await log.put("key-0", payload("key-0 again", size: 16), durability: .durable)
            try await log.put("tail-1", payload("tail-1", size: 10), durability: .durable)
            try await log.put("tail-2", payload("tail-2", size: 10), durability: .durable)
        }
    }

    /// One segment whose last unit is an atomic batch of three.
    static func endingInBatch() async throws -> VectorFiles {
        try await write { log in
            for index in 0..<3 { try await log.put(LogKey("key-\(index)"), payload("key-\(index)", size: 10), durability: .durable) }
            try await log.append(
                (0..<3).map { LogWrite.value(LogKey("batch-\($0)"), payload("batch-\($0)", size: 20)) }, durability: .durable)
        }
    }

    /// Three durable records, then five only written (their watermarks stay
    /// at 3): what a crash leaves before the close's sync.
    static func unsynced() async throws -> VectorFiles {
        try await write { log in
            for index in 0..<3 { try await log.put(LogKey("key-\(index)"), payload("key-\(index)", size: 10), durability: .durable) }
            for index in 3..<8 { try await log.put(LogKey("key-\(index)"), payload("key-\(index)", size: 10), durability: .written) }
        }
    }

    /// Several 4 KiB segments, with a batch in the second.
    static func multiSegment() async throws -> VectorFiles {
        try await write { log in
            for index in 0..<40 { try await log.put(LogKey("key-\(index)"), payload("key-\(index)", size: 100), durability: .durable) }
            try await log.append(
                (0..<3).map { LogWrite.value(LogKey("batch-\($0)"), payload("batch-\($0)", size: 100)) }, durability: .durable)
            for index in 40..<80 { try await log.put(LogKey("key-\(index)"), payload("key-\(index)", size: 100), durability: .durable) }
        }
    }

    /// Records that expire (at 1970 plus 1,000 s, one annotation at plus
    /// 1,500 s) over several segments, then records that never do.
    static func expiring() async throws -> VectorFiles {
        try await write { log in
            let soon = Date(timeIntervalSince1970: 1_000)
            for index in 0..<30 {
                try await log.put(LogKey("old-\(index)"), payload("old-\(index)", size: 100), expiresAt: soon, durability: .durable)
            }
            try await log.annotate(
                "old-29", Array("kept a while".utf8), expiresAt: Date(timeIntervalSince1970: 1_500), durability: .durable)
            for index in 0..<10 { try await log.put(LogKey("new-\(index)"), payload("new-\(index)", size: 100), durability: .durable) }
        }
    }

    /// ``expiring()`` after retention at 1970 plus 2,000 s: the segments of
    /// expired records only are gone.
    static func afterRetention(_ before: VectorFiles) async throws -> VectorFiles {
        try await write(startingFrom: before) { log in _ = try await log.removeExpired(now: Date(timeIntervalSince1970: 2_000)) }
    }

    /// ``multiSegment()`` with most of its early keys overwritten or
    /// deleted: sealed segments full of dead records, not yet compacted.
    static func beforeCompaction() async throws -> VectorFiles {
        try await write(startingFrom: try await multiSegment()) { log in
            for index in stride(from: 0, to: 30, by: 2) {
                try await log.put(LogKey("key-\(index)"), payload("new-\(index)", size: 30), durability: .durable)
            }
            for index in stride(from: 1, to: 30, by: 2) { try await log.delete(LogKey("key-\(index)"), durability: .durable) }
        }
    }

    /// ``beforeCompaction()`` after `compact()`.
    static func afterCompaction(_ before: VectorFiles) async throws -> VectorFiles {
        try await write(startingFrom: before) { log in _ = try await log.compact() }
    }

    // MARK: Deterministic salts

    /// Every segment (and `.compacting` output) with the salt
    /// `0x5A17_0000_0000_0000 + base·256 + generation`, its CRCs recomputed.
    static func canonical(_ files: VectorFiles, generation: UInt64 = 1) -> VectorFiles {
        files.mapValues { $0 }.reduce(into: VectorFiles()) { result, file in
            guard file.key.hasSuffix(".seg") || file.key.hasSuffix(".seg.compacting") else {
                result[file.key] = file.value
                return
            }
            var segment = VectorSegment(parsing: file.value)
            segment.salt = 0x5A17_0000_0000_0000 &+ segment.base &* 256 &+ generation
            result[file.key] = segment.encoded()
        }
    }

    // MARK: Files

    static func load(_ directory: String) throws -> VectorFiles {
        var files = VectorFiles()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name != "LOCK" {
            var isDirectory: ObjCBool = false
            let path = directory + "/" + name
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            files[name] = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        return files
    }

    /// Writes `files` under `directory`; a name with a `/` (a durable
    /// queue's `elements/…`) goes into that subdirectory.
    static func store(_ files: VectorFiles, in directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (name, bytes) in files {
            let url = URL(fileURLWithPath: directory + "/" + name)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
        }
    }

    /// A scratch directory under the system's temporary directory.
    struct Scratch {
        let path: String

        init() throws {
            path = FileManager.default.temporaryDirectory.path + "/outbox-vectors-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }

        func remove() { try? FileManager.default.removeItem(atPath: path) }
    }
}
