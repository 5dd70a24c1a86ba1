import Logging
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// The segment target's in-memory disk, and its seeds: real segments made
/// by the engine.
enum SegmentTarget {
    static let path: FilePath = "/fuzz/00000000000000000001.seg"

    /// On a fresh in-memory disk each time: memory, not the disk, because
    /// the target runs thousands of times a second, and fresh because the
    /// simulated disk remembers every unsynced write (for its crash model).
    static func run(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        try LogSegmentFuzzing.segment(input, fileSystem: SimulatedFileSystem(directories: ["/fuzz"]), path: path)
    }

    /// The segments of a small log the engine writes: values, annotations,
    /// deletes, batches and markers, appended and (after a compaction)
    /// rewritten. Each is seeded twice: as is, and with every CRC repaired.
    static func seeds() async throws -> [[UInt8]] {
        let disk = SimulatedFileSystem(directories: ["/seed"])
        var configuration = OutboxLog.Configuration()
        configuration.fileSystem = disk
        configuration.segmentSize = 4096
        configuration.automaticCompactionRatio = nil
        configuration.logger = Logger(label: "outbox.fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        let directory: FilePath = "/seed/log"
        var segments: [[UInt8]] = []
        func collect() {
            for file in disk.allFiles().sorted(by: { $0.string < $1.string }) where file.extension == "seg" {
                if let bytes = disk.contents(of: file), !segments.contains(bytes) { segments.append(bytes) }
            }
        }

        let log = try await OutboxLog.open(at: directory, configuration: configuration)
        for step in 0..<60 {
            let key = LogKey("message/\(step % 9)")
            let value = Array("step \(step) ".utf8) + [UInt8](repeating: UInt8(step), count: step % 5 * 20)
            switch step % 6 {
            case 0, 1: _ = try await log.put(key, value, durability: .buffered)
            case 2: _ = try await log.put(key, value, durability: .durable)
            case 3: if log.contains(key) { try await log.annotate(key, [UInt8(step), 1], durability: .written) }
            case 4:
                let batch: [LogWrite] = [.value(key, value), .value(LogKey("batch/\(step)"), [1, 2]), .tombstone(LogKey("batch/\(step - 6)"))]
                _ = try await log.append(batch, durability: .written)
            default: _ = try await log.delete(key, durability: .buffered)
            }
        }
        try await log.close()
        collect()
        let reopened = try await OutboxLog.open(at: directory, configuration: configuration)
        _ = try await reopened.compact()
        try await reopened.close()
        collect()
        return segments.flatMap { [[0] + $0, [3] + $0] }
    }
}
