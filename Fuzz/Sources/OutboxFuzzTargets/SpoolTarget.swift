import Foundation
import Logging
import Outbox
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// The spool target's seeds: the spools another process writes while the
/// queue is held (plain and sealed), their records, names and marks.
enum SpoolTarget {
    static let root: FilePath = "/seed/outbox"

    static func seeds() async throws -> [[UInt8]] {
        var spools = SpoolFuzzing.SeedSpools()
        for sealed in [false, true] { try await spool(sealed: sealed, into: &spools) }
        return try SpoolFuzzing.seeds(spools)
    }

    /// Spools two writes while an owner holds the queue, and reads the
    /// spool as the owner will.
    static func spool(sealed: Bool, into spools: inout SpoolFuzzing.SeedSpools) async throws {
        let disk = SimulatedFileSystem()
        let configuration = try CheckpointTarget.configuration(disk, key: sealed ? SpoolFuzzing.rawKey : nil)
        let owner = try await LogOutboxStore.open(root: root, partition: SpoolFuzzing.partition, configuration: configuration)
        let parent = OutboxEntry.ID()
        let requests = [
            OutboxEnqueueRequest(
                idempotencyKey: "share-1", type: "share", method: "POST", endpoint: "/shares", payload: Array(#"{"url":"https://example.com"}"#.utf8),
                headers: ["Content-Type": "application/json"], scope: "chat-1", coalescingKey: "share-draft"),
            OutboxEnqueueRequest(type: "photo", method: "PUT", endpoint: "/photos/1", payload: [0xFF, 0xD8, 0xFF], dependencies: [parent]),
        ]
        guard case .spooled = try await LogOutboxStore.enqueue(
            requests, root: root, partition: SpoolFuzzing.partition, configuration: configuration)
        else { throw FuzzViolation("harness: the writes were not spooled") }
        let spoolsDirectory = root.appending("spools")
        for queue in try disk.contentsOfDirectory(spoolsDirectory) {
            let directory = spoolsDirectory.appending(queue)
            for name in try disk.contentsOfDirectory(directory) {
                spools.names.append(name)
                guard name.hasPrefix("spool+"), !name.hasSuffix(".lock") else { continue }
                var logConfiguration = configuration.log
                logConfiguration.createIfMissing = false
                let log = try await OutboxLog.open(at: directory.appending(name), configuration: logConfiguration)
                for record in try await log.entries(after: 0, limit: 100) {
                    spools.marks.append(record.sequence)
                    if record.key.bytes.first == 0x45 { spools.records.append((Array(record.key.bytes), record.value, sealed)) }
                }
                try await log.close()
            }
        }
        try await owner.close()
    }
}
