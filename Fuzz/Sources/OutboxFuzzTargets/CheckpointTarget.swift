import Foundation
import Logging
import Outbox
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// The store checkpoint target's in-memory disk, and its seeds: the
/// `SCHEDULE` files a store writes at close, plain and sealed, over a queue
/// with every kind of entry a checkpoint keeps.
enum CheckpointTarget {
    /// A fresh in-memory disk each time, as for the segment target.
    static func run(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        try StoreCheckpointFuzzing.checkpoint(input, fileSystem: SimulatedFileSystem(directories: ["/fuzz"]))
    }

    static func seeds() async throws -> [[UInt8]] {
        var files: [(bytes: [UInt8], sealed: Bool)] = []
        for sealed in [false, true] { files.append((try await checkpointFile(sealed: sealed), sealed)) }
        return try StoreCheckpointFuzzing.seeds(files: files)
    }

    static func configuration(_ disk: SimulatedFileSystem, key: [UInt8]?) throws -> OutboxStoreConfiguration {
        var configuration = OutboxStoreConfiguration()
        configuration.log.fileSystem = disk
        configuration.log.logger = Logger(label: "outbox.fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        configuration.log.automaticCompactionRatio = nil
        // Unscoped entries independent of each other, so each can be attempted.
        configuration.unscopedDelivery = .concurrent
        if let key { try configuration.setEncryptionKey(key) }
        return configuration
    }

    /// A queue with a delivered entry (a completion with a server id and an
    /// app's key), a failed one, one in flight, one quarantined, one whose
    /// outcome is unknown, a dependent, and one unchanged under a
    /// coalescing key; closed, so the store writes its checkpoint.
    static func checkpointFile(sealed: Bool) async throws -> [UInt8] {
        let disk = SimulatedFileSystem()
        let store = try await LogOutboxStore.open(
            root: "/seed", partition: StoreCheckpointFuzzing.partition,
            configuration: configuration(disk, key: sealed ? StoreCheckpointFuzzing.rawKey : nil))
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        func request(_ name: String, scope: String? = nil, key: String? = nil, coalescing: String? = nil, after: [OutboxEntry.ID] = [])
            -> OutboxEnqueueRequest
        {
            OutboxEnqueueRequest(
                idempotencyKey: key, type: "message", method: "POST", endpoint: "/messages/" + name.replacingOccurrences(of: " ", with: "-"),
                payload: Array(#"{"text":"\#(name)"}"#.utf8), scope: scope, dependencies: after, priority: name.count % 3,
                coalescingKey: coalescing, createdAt: now)
        }
        let delivered = request("delivered", scope: "chat-1", key: "order-1")
        let failed = request("failed")
        let inFlight = request("in flight", scope: "chat-2")
        let quarantined = request("quarantined")
        let unknown = request("unknown")
        let dependent = request("dependent", after: [failed.id])
        let orphan = request("orphan", after: [quarantined.id])  // quarantined with it: a dependency failure
        let draft = request("draft", coalescing: "draft-7")
        _ = try await store.enqueue([delivered, failed, inFlight, quarantined, unknown, dependent, orphan, draft])
        let lease = Duration.seconds(60)
        _ = try await store.beginAttempt(delivered.id, at: now, lease: lease)
        try await store.recordSuccess(delivered.id, serverID: "msg/1", at: now)
        _ = try await store.beginAttempt(failed.id, at: now, lease: lease)
        _ = try await store.recordFailure(
            failed.id, OutboxFailure(.transient, httpStatus: 503, message: "Service Unavailable"),
            retryAt: now.addingTimeInterval(60), countsAsAttempt: true,
            serverAnsweredAt: now, outcomeUnknownAt: nil)
        _ = try await store.beginAttempt(unknown.id, at: now, lease: lease)
        _ = try await store.recordFailure(
            unknown.id, OutboxFailure(.interrupted, message: "timed out"), retryAt: now.addingTimeInterval(30),
            countsAsAttempt: false,
            serverAnsweredAt: nil, outcomeUnknownAt: now)
        _ = try await store.quarantine(quarantined.id, OutboxFailure(.permanent, httpStatus: 400, message: "Bad Request"))
        _ = try await store.beginAttempt(inFlight.id, at: now, lease: lease)
        try await store.close()
        guard let path = disk.allFiles().first(where: { $0.lastComponent?.string == "SCHEDULE" }), let bytes = disk.contents(of: path) else {
            throw FuzzViolation("harness: the store wrote no checkpoint")
        }
        return bytes
    }
}
