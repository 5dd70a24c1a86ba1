import Foundation
@testable import IdempotencyKeyMiddleware
import OutboxLog
import Testing

/// The durable key store's life cycle: what an open loads, what expiry
/// deletes, and that the engine's compaction reclaims it.
@Suite("LogIdempotencyKeyStore", .serialized, .timeLimit(.minutes(1)))
struct LogIdempotencyKeyStoreTests {
    let t0 = Date(timeIntervalSince1970: 1_900_000_000)
    let claim = IdempotencyClaim(owner: "test", staleAfter: .seconds(60))

    func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("idem-log-\(UUID().uuidString)").path
    }

    /// Claims and completes `key` at `now`, kept until `expiresAt`.
    func store(_ key: String, in store: LogIdempotencyKeyStore, now: Date, expiresAt: Date, body: String = #"{"id":"x"}"#) async throws {
        #expect(try await store.begin(key: key, fingerprint: Array(key.utf8), now: now, claim: claim) == .proceed)
        try await store.complete(
            key: key, response: StoredResponse(status: 201, headers: ["content-type": "application/json"], body: Array(body.utf8)),
            now: now, expiresAt: expiresAt)
    }

    @Test("open deletes keys that expired while the server was down instead of loading them")
    func openDropsExpired() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        try await store("old-1", in: first, now: t0, expiresAt: t0.addingTimeInterval(10))
        try await store("old-2", in: first, now: t0, expiresAt: t0.addingTimeInterval(20))
        try await store("fresh", in: first, now: t0, expiresAt: t0.addingTimeInterval(1000))
        try await first.close()

        let later = t0.addingTimeInterval(100)
        let reopened = try await LogIdempotencyKeyStore.open(at: .init(directory), now: later)
        #expect(reopened.count == 1)
        #expect(reopened.log.keys.map(\.description).sorted() == ["fresh"])
        let replay = try await reopened.begin(key: "fresh", fingerprint: Array("fresh".utf8), now: later, claim: claim)
        guard case .completed(let response) = replay else {
            Issue.record("fresh key not replayed: \(replay)")
            return
        }
        #expect(response.body == Array(#"{"id":"x"}"#.utf8))
        #expect(try await reopened.begin(key: "old-1", fingerprint: Array("old-1".utf8), now: later, claim: claim) == .proceed)
        try await reopened.close()

        // The deletions were written: a third open finds only the live key
        // (and the claim above, never completed, left nothing).
        let third = try await LogIdempotencyKeyStore.open(at: .init(directory), now: later)
        #expect(third.count == 1)
        #expect(third.log.keys.map(\.description) == ["fresh"])
        try await third.close()
    }

    @Test("expire writes tombstones, and the log's automatic compaction reclaims the expired records")
    func expiredRecordsCompacted() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = OutboxLog.Configuration()
        configuration.segmentSize = 4096
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: configuration, now: t0)
        let padding = String(repeating: "p", count: 200)
        for index in 0..<60 {
            try await store("short-\(index)", in: keys, now: t0, expiresAt: t0.addingTimeInterval(10), body: padding)
        }
        #expect(keys.log.statistics.liveKeys == 60)
        let later = t0.addingTimeInterval(100)
        #expect(try await keys.expire(now: later) == 60)
        #expect(keys.count == 0)
        #expect(keys.log.statistics.liveKeys == 0)
        let deadAfterExpiry = keys.log.statistics.deadBytes
        #expect(deadAfterExpiry > 0)

        // Normal traffic rolls segments; the engine compacts on its own.
        var written = 0
        while keys.log.statistics.compactions == 0 && written < 200 {
            try await store("live-\(written)", in: keys, now: later, expiresAt: later.addingTimeInterval(3600), body: padding)
            written += 1
            await keys.log.waitForBackgroundCompaction()
        }
        #expect(keys.log.statistics.compactions > 0, "no automatic compaction after \(written) more keys")
        #expect(keys.log.statistics.deadBytes < deadAfterExpiry)
        #expect(keys.log.statistics.liveKeys == written)
        #expect(keys.count == written)
        try await keys.close()
    }

    @Test("responses are stored with a base64 body; a record with a byte-array body is still read")
    func bodyEncoding() throws {
        let response = StoredResponse(status: 200, headers: [:], body: Array("hello".utf8))
        let json = String(decoding: try JSONEncoder().encode(response), as: UTF8.self)
        #expect(json.contains(#""body":"aGVsbG8=""#))
        let legacy = #"{"status":200,"headers":{},"body":[104,101,108,108,111]}"#
        #expect(try JSONDecoder().decode(StoredResponse.self, from: Data(legacy.utf8)) == response)
    }
}
