import Foundation
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

/// A configuration with small segments so tests roll often.
func smallSegments(_ size: Int = 4096) -> OutboxLog.Configuration {
    var configuration = OutboxLog.Configuration()
    configuration.segmentSize = size
    configuration.automaticCompactionRatio = nil
    return configuration
}
