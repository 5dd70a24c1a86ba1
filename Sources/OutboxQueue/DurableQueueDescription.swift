import Foundation
import OutboxLog
import SystemPackage

/// What a durable queue's two logs decode to, as JSON objects named after
/// Docs/STORE-FORMAT.md ("The durable queue's records"): the expected
/// results of its test vector (Tests/StoreVectors), made by `outbox log
/// make-store-vectors` and checked by the tests with the decoders the queue
/// reads with. Keys and names lowercase hex, bytes base64, times
/// milliseconds since 1970; elements in position order, consumers by name.
package enum DurableQueueDescription {
    /// The queue in `directory` (a copy: opening its logs read-only still
    /// creates `LOCK`s): `{"durableQueue": {"elements": …, "consumers": …}}`.
    package static func directory(
        _ directory: FilePath, configuration: OutboxLog.Configuration = OutboxLog.Configuration()
    ) async throws -> [String: Any] {
        let elementsLog = directory.appending("elements")
        var elements: [[String: Any]] = []
        try await read(elementsLog, configuration) { entry, log in
            let element = try ElementRecord.decode(entry, in: log)
            elements.append([
                "position": Int(entry.sequence), "key": hex(entry.key.bytes), "bytes": Data(element.bytes).base64EncodedString(),
                "appendedAt": Int((element.appendedAt.timeIntervalSince1970 * 1000).rounded(.down)),
            ])
        }
        var consumers: [[String: Any]] = []
        try await read(directory.appending("consumers"), configuration) { entry, log in
            let committed = try ConsumerOffsets.decode(entry.value, consumer: entry.key, in: log)
            consumers.append(["name": hex(entry.key.bytes), "committed": Int(committed)])
        }
        consumers.sort { ($0["name"] as? String ?? "") < ($1["name"] as? String ?? "") }
        return ["durableQueue": ["elements": elements, "consumers": consumers]]
    }

    /// Every live record of the log in `directory`, opened strict and read-only, in sequence order.
    private static func read(
        _ directory: FilePath, _ configuration: OutboxLog.Configuration, _ visit: (LogEntry, OutboxLog) throws -> Void
    ) async throws {
        var configuration = configuration
        configuration.readOnly = true
        configuration.createIfMissing = false
        let log = try await OutboxLog.open(at: directory, configuration: configuration)
        do {
            for try await entry in log.allEntries() { try visit(entry, log) }
        } catch {
            try? await log.close()
            throw error
        }
        try await log.close()
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
