import Foundation
import Logging
import Outbox
import OutboxLog
import SystemPackage

/// The queue the store's vectors hold (Tests/StoreVectors): written by
/// ``LogOutboxStore`` through its public API with a fixed clock and fixed
/// ids, every write durable (so each record's durable watermark is the
/// record before it), then given the engine vectors' deterministic salts.
/// Entries in every status, a body with every field, and a last failure of
/// every cause code Docs/STORE-FORMAT.md defines.
enum StoreVectorQueue {
    static let partition = "vectors"
    /// Every time in the vectors counts from here (2023-11-14T22:13:20Z).
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    static func at(_ seconds: Int) -> Date { start.addingTimeInterval(TimeInterval(seconds)) }

    /// The id of entry `number`: `5ec7…` then the number, big-endian.
    static func id(_ number: UInt8) -> OutboxEntry.ID {
        OutboxEntry.ID(UUID(uuid: (0x5E, 0xC7, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, number)))
    }

    static func configuration() -> OutboxStoreConfiguration {
        var configuration = OutboxStoreConfiguration()
        configuration.enqueueDurability = .durable
        configuration.attemptDurability = .durable
        configuration.successDurability = .durable
        configuration.outcomeDurability = .durable
        // Delivered entries stay (status 5) beside their completions.
        configuration.succeededRetention = .seconds(30 * 24 * 3600)
        // Unscoped entries each on their own: one waiting to retry holds no other back.
        configuration.unscopedDelivery = .concurrent
        configuration.log = VectorLogs.configuration(segmentSize: 1 << 20)
        // When an entry is quarantined (the calls that quarantine take no time).
        configuration.clock = { at(500) }
        return configuration
    }

    /// The queue directory's files after a clean close (`LOCK` and the
    /// engine's `INDEX` left out), salts made deterministic, `SCHEDULE`'s
    /// position following them.
    static func files() async throws -> VectorFiles {
        let root = try VectorLogs.Scratch()
        defer { root.remove() }
        let store = try await LogOutboxStore.open(
            root: FilePath(root.path), partition: partition, configuration: configuration(), now: start)
        try await fill(store)
        try await store.close()
        let partitions = root.path + "/partitions"
        let queues = try FileManager.default.contentsOfDirectory(atPath: partitions).filter { $0.hasPrefix("outbox+") }
        guard queues.count == 1 else { throw VectorError("expected one queue directory, found \(queues)") }
        var files = VectorLogs.canonical(try VectorLogs.load(partitions + "/" + queues[0]))
        files["INDEX"] = nil
        if let schedule = files["SCHEDULE"] { files["SCHEDULE"] = canonicalSchedule(schedule) }
        return files
    }

    /// Enqueues and moves the entries; every call at a fixed time.
    static func fill(_ store: LogOutboxStore) async throws {
        let lease = Duration.seconds(60)
        // 1: pending, every body field; 2: pending with a coalescing key and the app's key.
        _ = try await store.enqueue(
            OutboxEnqueueRequest(
                id: id(1), type: "send_message", method: "POST", endpoint: "/conversations/7/messages",
                payload: Array(#"{"text":"hello"}"#.utf8),
                headers: ["Content-Type": "application/json", "X-Client": "vectors"], scope: "conversation:7",
                priority: 5, maxAttempts: 3, createdAt: at(1)))
        _ = try await store.enqueue(
            OutboxEnqueueRequest(
                id: id(2), idempotencyKey: "like-42-v1", type: "like", method: "PUT", endpoint: "/posts/42/like",
                coalescingKey: "like:42", createdAt: at(2)))
        // 3: in flight; 4: depends on 3, pending.
        _ = try await store.enqueue(request(3, createdAt: at(3)))
        _ = try await store.enqueue(
            OutboxEnqueueRequest(
                id: id(4), type: "comment", method: "POST", endpoint: "/posts/local:\(id(3))/comments",
                dependencies: [id(3)], priority: -2, createdAt: at(4)))
        _ = try await store.beginAttempt(id(3), at: at(10), lease: lease)
        // 5 and 6: delivered (6 with the app's key: a version 2 completion).
        for (number, key) in [(UInt8(5), nil), (6, "invoice-2024-001")] as [(UInt8, String?)] {
            _ = try await store.enqueue(request(number, idempotencyKey: key, createdAt: at(Int(number))))
            _ = try await store.beginAttempt(id(number), at: at(20), lease: lease)
            try await store.recordSuccess(id(number), serverID: number == 5 ? "srv-5" : nil, at: at(21))
        }
        try await fillFailures(store, lease: lease)
    }

    /// One entry per cause code (1…17): waiting to retry, quarantined, a
    /// conflict, and a dependent quarantined with its parent.
    static func fillFailures(_ store: LogOutboxStore, lease: Duration) async throws {
        let causes: [OutboxFailure.Cause] = [
            .notSent, .interrupted, .leaseExpired, .inProgress, .unavailable, .transient, .handlerError,
            .attemptsUsedUp, .permanent, .expired, .payloadFileDamaged, .unresolvedReference,
        ]
        for (index, cause) in causes.enumerated() {
            let number = UInt8(20 + index)
            _ = try await store.enqueue(request(number, createdAt: at(30 + index)))
            _ = try await store.beginAttempt(id(number), at: at(100 + index), lease: lease)
            let failure = OutboxFailure(cause, httpStatus: index.isMultiple(of: 3) ? 500 + index : nil, message: "cause \(index + 1)")
            if index.isMultiple(of: 2) {
                _ = try await store.recordFailure(
                    id(number), failure, retryAt: at(1000 + index), countsAsAttempt: true,
                    serverAnsweredAt: index.isMultiple(of: 4) ? at(101 + index) : nil,
                    outcomeUnknownAt: cause == .interrupted || cause == .notSent ? at(100 + index) : nil)
            } else {
                _ = try await store.quarantine(id(number), failure)
            }
        }
        // 40: a conflict; 41…45: the last causes, waiting to retry.
        _ = try await store.enqueue(request(40, createdAt: at(60)))
        _ = try await store.beginAttempt(id(40), at: at(200), lease: lease)
        try await store.markConflict(id(40), OutboxFailure(.conflict, httpStatus: 409, message: nil))
        for (offset, cause) in [OutboxFailure.Cause.alreadyProcessed, .inProgressTooLong, .keyMayBeForgotten].enumerated() {
            let number = UInt8(41 + offset)
            _ = try await store.enqueue(request(number, createdAt: at(61 + offset)))
            _ = try await store.beginAttempt(id(number), at: at(210 + offset), lease: lease)
            _ = try await store.recordFailure(
                id(number), OutboxFailure(cause, httpStatus: cause == .alreadyProcessed ? 422 : nil), retryAt: at(2000),
                countsAsAttempt: false, serverAnsweredAt: nil, outcomeUnknownAt: nil)
        }
        // 50, and 51 depending on it: 50 quarantined, 51 with it (cause 13, fate 1).
        _ = try await store.enqueue(request(50, createdAt: at(70)))
        _ = try await store.enqueue(
            OutboxEnqueueRequest(
                id: id(51), type: "attach", method: "POST", endpoint: "/uploads/local:\(id(50))/attach",
                dependencies: [id(50)], createdAt: at(71)))
        _ = try await store.beginAttempt(id(50), at: at(300), lease: lease)
        _ = try await store.quarantine(id(50), OutboxFailure(.permanent, httpStatus: 400, message: "bad request"))
    }

    static func request(_ number: UInt8, idempotencyKey: String? = nil, createdAt: Date) -> OutboxEnqueueRequest {
        OutboxEnqueueRequest(
            id: id(number), idempotencyKey: idempotencyKey, type: "note", method: "POST", endpoint: "/notes",
            payload: Array("note \(number)".utf8), createdAt: createdAt)
    }

    // MARK: Deterministic salts in SCHEDULE

    /// `SCHEDULE` with each segment of its log position given the salt
    /// ``VectorLogs/canonical(_:generation:)`` gives it, and its header's
    /// CRC recomputed (a plain body is not bound to the position).
    static func canonicalSchedule(_ bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        let headerSize = Int(VectorBytes.load(bytes, at: 12) as UInt32)
        let count = Int(VectorBytes.load(bytes, at: 36 + 8) as UInt32)
        for index in 0..<count {
            let offset = 36 + 12 + 16 * index
            let base: UInt64 = VectorBytes.load(bytes, at: offset)
            VectorBytes.store(0x5A17_0000_0000_0000 &+ base &* 256 &+ 1, into: &bytes, at: offset + 8)
        }
        VectorBytes.store(VectorBytes.crc32(bytes[0..<(headerSize - 4)]), into: &bytes, at: headerSize - 4)
        return bytes
    }
}

/// A vector that could not be made as designed.
struct VectorError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
