import Foundation
import IdempotencyKeyMiddleware
import OutboxLog
import SystemPackage

/// The key store the store's vectors hold (Tests/StoreVectors): a
/// ``LogIdempotencyKeyStore`` written through its public API with a fixed
/// clock and a fixed `keys.secret` (a real store draws 32 random bytes),
/// then given the engine vectors' deterministic salts. Keys in each state:
/// completed, claimed, outcome unknown, and one released (a tombstone).
enum StoreVectorKeys {
    /// `keys.secret`: bytes 0, 1, …, 31.
    static let secret = [UInt8](0..<32)

    static func files() async throws -> VectorFiles {
        let directory = try VectorLogs.Scratch()
        defer { directory.remove() }
        try Data(secret).write(to: URL(fileURLWithPath: directory.path + "/keys.secret"))
        var configuration = LogIdempotencyKeyStore.Configuration()
        configuration.segmentSize = 1 << 20
        let now = StoreVectorQueue.start
        let store = try await LogIdempotencyKeyStore.open(at: FilePath(directory.path), configuration: configuration, now: now)
        let expiry = StoreVectorQueue.at(24 * 3600)
        func claim(_ owner: String) -> IdempotencyClaim {
            IdempotencyClaim(owner: owner, staleAfter: .seconds(60), expiresAt: expiry)
        }
        func fingerprint(_ seed: UInt8) -> [UInt8] { (0..<32).map { seed &+ $0 } }

        // Completed: a claim, then the response (the claim's tombstone in the same batch).
        _ = try await store.begin(key: "order-1", fingerprint: fingerprint(0x10), now: StoreVectorQueue.at(1), claim: claim("server-a"))
        try await store.complete(
            key: "order-1",
            response: StoredResponse(
                status: 201, headers: ["content-type": "application/json", "location": "/orders/1"],
                body: Array(#"{"id":1}"#.utf8)),
            now: StoreVectorQueue.at(2), expiresAt: expiry)
        // Completed with an empty body and no headers.
        _ = try await store.begin(key: "ping", fingerprint: fingerprint(0x20), now: StoreVectorQueue.at(3), claim: claim("server-b"))
        try await store.complete(
            key: "ping", response: StoredResponse(status: 204, headers: [:], body: []), now: StoreVectorQueue.at(4),
            expiresAt: StoreVectorQueue.at(3600))
        // Claimed: the request may still be running.
        _ = try await store.begin(key: "order-2", fingerprint: fingerprint(0x30), now: StoreVectorQueue.at(5), claim: claim("server-a"))
        // Outcome unknown: the response was not recorded.
        _ = try await store.begin(key: "order-3", fingerprint: fingerprint(0x40), now: StoreVectorQueue.at(6), claim: claim("server-b"))
        try await store.settleUnknown(key: "order-3", owner: "server-b", now: StoreVectorQueue.at(7), expiresAt: expiry)
        // Released: claimed, then a tombstone (last: a release waits for the write only).
        _ = try await store.begin(key: "order-4", fingerprint: fingerprint(0x50), now: StoreVectorQueue.at(8), claim: claim("server-a"))
        try await store.abandon(key: "order-4", owner: "server-a")
        try await store.close()
        var files = VectorLogs.canonical(try VectorLogs.load(directory.path))
        files["INDEX"] = nil
        return files
    }
}
