import Foundation
import Logging
import OutboxLocking
import OutboxLog
import SystemPackage
import Testing

/// A fresh temporary directory for one test, removed when the value dies.
final class TemporaryDirectory: Sendable {
    let path: FilePath

    init(_ name: String = "outbox-log-test") {
        let base = FileManager.default.temporaryDirectory.path
        path = FilePath("\(base)/\(name)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(atPath: path.string, withIntermediateDirectories: true)
    }

    /// A subdirectory path (not created).
    func appending(_ component: String) -> FilePath { path.appending(component) }

    deinit { try? FileManager.default.removeItem(atPath: path.string) }
}

extension Array where Element == UInt8 {
    /// Deterministic test bytes.
    static func pattern(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 31) &+ seed &* 7 &+ ($0 >> 8)) }
    }
}

/// The default configuration, with logging silenced (tests provoke errors
/// on purpose).
func testConfiguration(_ mode: OutboxLog.Configuration.RecoveryMode = .strict) -> OutboxLog.Configuration {
    var configuration = OutboxLog.Configuration()
    configuration.logger = Logger(label: "outbox.log.test", factory: { _ in SwiftLogNoOpLogHandler() })
    configuration.recoveryMode = mode
    return configuration
}

/// A configuration with small segments so tests roll often.
func smallSegments(_ size: Int = 4096) -> OutboxLog.Configuration {
    var configuration = testConfiguration()
    configuration.segmentSize = size
    configuration.automaticCompactionRatio = nil
    return configuration
}

/// Byte-level access to a log directory, for damage tests.
struct LogFiles {
    let directory: FilePath

    /// Segment file paths, oldest first.
    var segments: [FilePath] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.string)) ?? []
        return names.filter { $0.hasSuffix(".seg") }.sorted().map { directory.appending($0) }
    }

    func read(_ path: FilePath) -> [UInt8] {
        [UInt8](FileManager.default.contents(atPath: path.string) ?? Data())
    }

    /// Overwrites bytes in place (same inode: an open log sees the change).
    func overwrite(_ path: FilePath, at offset: Int, with bytes: [UInt8]) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path.string))
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(bytes))
        try handle.close()
    }

    func write(_ bytes: [UInt8], to path: FilePath) {
        _ = FileManager.default.createFile(atPath: path.string, contents: Data(bytes))
    }

    /// Every regular file's name and bytes (to prove nothing changed).
    func snapshot() -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.string)) ?? []
        for name in names where name != "LOCK" {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: directory.appending(name).string, isDirectory: &isDirectory)
            if !isDirectory.boolValue { result[name] = read(directory.appending(name)) }
        }
        return result
    }

    /// Copies the segment files (not the lock) into another directory.
    func copy(to other: FilePath, transform: (String, [UInt8]) -> [UInt8]? = { $1 }) {
        try? FileManager.default.createDirectory(atPath: other.string, withIntermediateDirectories: true)
        for (name, bytes) in snapshot() {
            if let changed = transform(name, bytes) {
                _ = FileManager.default.createFile(atPath: other.appending(name).string, contents: Data(changed))
            }
        }
    }
}

/// The frame size of a record, as Docs/FORMAT.md defines it.
func frameSize(key: String, payload: Int) -> Int { 28 + key.utf8.count + payload }

let segmentHeaderSize = 48

/// A log directory on a simulated file system.
let simulatedLogDirectory: FilePath = "/data/log"

/// A configuration whose file system is `fileSystem`.
func simulatedConfiguration(
    _ fileSystem: any FileSystem, segmentSize: Int = 4096, mode: OutboxLog.Configuration.RecoveryMode = .strict
) -> OutboxLog.Configuration {
    var configuration = smallSegments(segmentSize)
    configuration.fileSystem = fileSystem
    configuration.recoveryMode = mode
    return configuration
}

/// The live state of a log: key → (value, annotation).
typealias LogModel = [LogKey: (value: [UInt8], annotation: [UInt8]?)]

/// Reads every live key of `log` and checks it against `model`.
func expectLog(_ log: OutboxLog, equals model: LogModel, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    #expect(Set(log.keys) == Set(model.keys), comment, sourceLocation: sourceLocation)
    for (key, expected) in model {
        let entry = try await log.get(key)
        #expect(entry?.value == expected.value, "\(key): \(comment?.description ?? "")", sourceLocation: sourceLocation)
        #expect(entry?.annotation?.payload == expected.annotation, "\(key) annotation: \(comment?.description ?? "")", sourceLocation: sourceLocation)
    }
}

extension Locked where Value: Sendable {
    /// A copy of the value shared between tasks.
    var value: Value { withLock { $0 } }
}
