import Foundation
@testable import IdempotencyKeyMiddleware
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// The durable key store's life cycle: what an open loads (and how), what
/// expiry reclaims, the cap, and what a crash mid-request leaves. Time is the
/// `now:` every call takes (an injected clock); nothing sleeps.
@Suite("LogIdempotencyKeyStore", .serialized, .timeLimit(.minutes(5)))
struct LogIdempotencyKeyStoreTests {
    let t0 = Date(timeIntervalSince1970: 1_900_000_000)
    let claim = IdempotencyClaim(owner: "test", staleAfter: .seconds(60))

    func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("idem-log-\(UUID().uuidString)").path
    }

    func smallSegments(_ change: (inout LogIdempotencyKeyStore.Configuration) -> Void = { _ in }) -> LogIdempotencyKeyStore.Configuration {
        var configuration = LogIdempotencyKeyStore.Configuration()
        configuration.segmentSize = 4096
        change(&configuration)
        return configuration
    }

    /// Claims and completes `key` at `now`, kept until `expiresAt`.
    func store(_ key: String, in store: LogIdempotencyKeyStore, now: Date, expiresAt: Date, body: String = #"{"id":"x"}"#) async throws {
        let claim = IdempotencyClaim(owner: "test", staleAfter: .seconds(60), expiresAt: expiresAt)
        #expect(try await store.begin(key: key, fingerprint: Array(key.utf8), now: now, claim: claim) == .proceed)
        try await store.complete(
            key: key, response: StoredResponse(status: 201, headers: ["content-type": "application/json"], body: Array(body.utf8)),
            now: now, expiresAt: expiresAt)
    }

    func replayed(_ key: String, in store: LogIdempotencyKeyStore, now: Date) async throws -> StoredResponse? {
        let result = try await store.begin(key: key, fingerprint: Array(key.utf8), now: now, claim: claim)
        if case .completed(let response) = result { return response }
        Issue.record("\(key) was answered \(result), not replayed")
        return nil
    }

    func files(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    @Test("after a restart, keys that expired while the server was down are claimed afresh; the live ones replay byte for byte")
    func openSkipsExpired() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        try await store("old-1", in: first, now: t0, expiresAt: t0.addingTimeInterval(10))
        try await store("fresh", in: first, now: t0, expiresAt: t0.addingTimeInterval(1000))
        try await first.close()

        let later = t0.addingTimeInterval(100)
        let reopened = try await LogIdempotencyKeyStore.open(at: .init(directory), now: later)
        // Both records are held until retention removes their segment.
        #expect(reopened.count == 2)
        #expect(try await replayed("fresh", in: reopened, now: later)?.body == Array(#"{"id":"x"}"#.utf8))
        #expect(try await reopened.begin(key: "old-1", fingerprint: Array("old-1".utf8), now: later, claim: claim) == .proceed)
        try await reopened.close()
    }

    @Test("a restart reads the log's index checkpoint and the records after it, not every record; without it, everything")
    func restartFromIndexCheckpoint() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: smallSegments(), now: t0)
        for index in 0..<200 { try await store("k-\(index)", in: keys, now: t0, expiresAt: t0.addingTimeInterval(3600)) }
        #expect(keys.segmentCount > 3)
        try await keys.close()

        let reopened = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: smallSegments(), now: t0)
        #expect(reopened.recovery.log.indexCheckpoint != nil, "\(reopened.recovery.log)")
        #expect(reopened.recovery.completedKeys == 200)
        for index in stride(from: 0, to: 200, by: 37) { #expect(try await replayed("k-\(index)", in: reopened, now: t0) != nil) }
        try await reopened.close()

        try FileManager.default.removeItem(atPath: directory + "/INDEX")
        let rebuilt = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: smallSegments(), now: t0)
        #expect(rebuilt.recovery.log.indexCheckpoint == nil)
        #expect(rebuilt.recovery.completedKeys == 200)
        try await rebuilt.close()
        #expect(try files(directory).contains("INDEX"), "the checkpoint was written again at close")
    }

    @Test("a claim left unsettled in a sealed segment is still found after a restart")
    func unsettledClaimInSealedSegment() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: smallSegments(), now: t0)
        let expiring = IdempotencyClaim(owner: "dead", staleAfter: .seconds(60), expiresAt: t0.addingTimeInterval(3600))
        #expect(try await keys.begin(key: "stuck", fingerprint: [9], now: t0, claim: expiring) == .proceed)
        for index in 0..<200 { try await store("fill-\(index)", in: keys, now: t0, expiresAt: t0.addingTimeInterval(3600)) }
        #expect(keys.segmentCount > 2)
        try await keys.close()
        let reopened = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: smallSegments(), now: t0)
        #expect(reopened.recovery.log.indexCheckpoint != nil)
        guard case .outcomeUnknown = try await reopened.begin(key: "stuck", fingerprint: [9], now: t0, claim: claim) else {
            Issue.record("the claim in a sealed segment was lost")
            return
        }
        try await reopened.close()
    }

    @Test("expiry removes whole segments once every key in them expired: the disk space really comes back")
    func expiryReclaimsDisk() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: smallSegments(), now: t0)
        let padding = String(repeating: "p", count: 200)
        for index in 0..<60 { try await store("short-\(index)", in: keys, now: t0, expiresAt: t0.addingTimeInterval(10), body: padding) }
        let later = t0.addingTimeInterval(100)
        for index in 0..<10 { try await store("long-\(index)", in: keys, now: later, expiresAt: later.addingTimeInterval(3600)) }
        let before = keys.bytesOnDisk
        let segmentsBefore = try files(directory).filter { $0.hasSuffix(".seg") }.count
        #expect(try await keys.expire(now: t0.addingTimeInterval(5)) == 0, "nothing expired yet")
        // Whole segments go: the expired keys that share the segment where
        // the long-lived ones begin stay on disk (answered as expired) until
        // that segment's last key expires.
        let removed = try await keys.expire(now: later)
        #expect(removed >= 40)
        #expect(removed + keys.count == 70)
        #expect(keys.bytesOnDisk < before / 2)
        let segmentsAfter = try files(directory).filter { $0.hasSuffix(".seg") }.count
        #expect(segmentsAfter < segmentsBefore)
        #expect(try await replayed("long-3", in: keys, now: later) != nil)
        #expect(try await keys.begin(key: "short-3", fingerprint: Array("short-3".utf8), now: later, claim: claim) == .proceed)
        #expect(try await keys.begin(key: "short-59", fingerprint: Array("short-59".utf8), now: later, claim: claim) == .proceed)
        try await keys.close()
    }

    @Test("a quiet server's only segment is sealed and removed once all its keys expired")
    func quietActiveSegmentReclaimed() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        for index in 0..<5 { try await store("q-\(index)", in: keys, now: t0, expiresAt: t0.addingTimeInterval(10)) }
        #expect(try await keys.expire(now: t0.addingTimeInterval(11)) == 5)
        #expect(keys.count == 0)
        #expect(keys.segmentCount == 1 && keys.bytesOnDisk < 200, "one empty segment is left: \(keys.bytesOnDisk) bytes")
        try await keys.close()
    }

    @Test("at the key cap a new key is refused with Retry-After until one expires; no live key is ever dropped")
    func capNeverForgetsEarly() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: smallSegments { $0.maximumKeys = 5 }, now: t0)
        for index in 0..<5 { try await store("cap-\(index)", in: keys, now: t0, expiresAt: t0.addingTimeInterval(600)) }
        let refused = try await keys.begin(key: "cap-new", fingerprint: [1], now: t0.addingTimeInterval(100), claim: claim)
        #expect(refused == .atCapacity(retryAfter: .seconds(500)))
        for index in 0..<5 { #expect(try await replayed("cap-\(index)", in: keys, now: t0.addingTimeInterval(100)) != nil) }
        let afterExpiry = t0.addingTimeInterval(601)
        #expect(try await keys.begin(key: "cap-new", fingerprint: [1], now: afterExpiry, claim: claim) == .proceed)
        try await keys.close()
    }

    @Test("the byte cap refuses new keys the same way")
    func byteCap() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try await LogIdempotencyKeyStore.open(
            at: .init(directory), configuration: smallSegments { $0.maximumBytes = 2000 }, now: t0)
        var stored = 0
        while keys.bytesOnDisk < 2000 {
            try await store("b-\(stored)", in: keys, now: t0, expiresAt: t0.addingTimeInterval(60))
            stored += 1
        }
        guard case .atCapacity = try await keys.begin(key: "b-new", fingerprint: [1], now: t0, claim: claim) else {
            Issue.record("a new key was admitted past the byte cap")
            return
        }
        #expect(try await replayed("b-0", in: keys, now: t0) != nil)
        try await keys.close()
    }

    @Test("a server killed mid-request leaves its claim: after the restart the key is outcome-unknown, never run again")
    func claimSurvivesCrash() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        let expiring = IdempotencyClaim(owner: "dead-server", staleAfter: .seconds(60), expiresAt: t0.addingTimeInterval(3600))
        #expect(try await first.begin(key: "mid", fingerprint: [7], now: t0, claim: expiring) == .proceed)
        try await first.close()  // the process "dies" with the handler running

        let later = t0.addingTimeInterval(5)
        let reopened = try await LogIdempotencyKeyStore.open(at: .init(directory), now: later)
        #expect(reopened.recovery.unsettledKeys == 1)
        guard case .outcomeUnknown(let unsettled) = try await reopened.begin(key: "mid", fingerprint: [7], now: later, claim: claim) else {
            Issue.record("the key was not answered outcome-unknown")
            return
        }
        #expect(unsettled.reason == .serverStopped)
        #expect(unsettled.since == t0)
        #expect(try await reopened.unsettledKeys(now: later, limit: 10).map(\.key) == ["mid"])
        try await reopened.resolve(key: "mid", as: .notApplied, now: later)
        try await reopened.close()

        // The resolution is durable too.
        let third = try await LogIdempotencyKeyStore.open(at: .init(directory), now: later)
        #expect(third.recovery.unsettledKeys == 0)
        #expect(try await third.begin(key: "mid", fingerprint: [7], now: later, claim: claim) == .proceed)
        try await third.close()
    }

    @Test("a record torn at the end of the active segment is cut and reported; damage before good records fails the open")
    func tornTailAndCorruption() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        for index in 0..<3 { try await store("t-\(index)", in: keys, now: t0, expiresAt: t0.addingTimeInterval(600)) }
        try await keys.close()
        let segment = directory + "/" + (try #require(try files(directory).first { $0.hasSuffix(".seg") }))
        let handle = try #require(FileHandle(forUpdatingAtPath: segment))
        let end = try handle.seekToEnd()
        try handle.write(contentsOf: Data([40, 0, 0, 0, 1, 2, 3, 4, 2, 9, 9]))  // a frame cut short
        try handle.close()

        let reopened = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        #expect(reopened.recovery.log.truncatedTail?.bytes == 11, "\(reopened.recovery.log)")
        #expect(reopened.count == 3)
        try await reopened.close()
        let cut = try #require(FileManager.default.contents(atPath: segment))
        #expect(cut.count <= Int(end) || Array(cut[Int(end)..<(Int(end) + 4)]) != [40, 0, 0, 0], "the torn bytes are gone")

        // A flipped byte inside the first record, with good ones after it,
        // in a log read from its segments (no checkpoint vouches for them).
        try FileManager.default.removeItem(atPath: directory + "/INDEX")
        let damaged = try #require(FileHandle(forUpdatingAtPath: segment))
        try damaged.seek(toOffset: 48 + 30)
        try damaged.write(contentsOf: Data([0xFF]))
        try damaged.close()
        let error = await #expect(throws: IdempotencyKeyStoreError.self) { _ = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0) }
        #expect(error?.code == .damaged && error?.message.contains(segment) == true, "\(String(describing: error))")
    }

    @Test("a log that cannot be written refuses the claim (the caller answers 503 before running anything) and stays refused until reopened")
    func poisonedLogRefusesClaims() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let faults = FaultInjector()
        let keys = try await LogIdempotencyKeyStore.open(
            at: .init(directory), configuration: smallSegments { $0.fileSystem = FaultInjectingFileSystem(wrapping: PosixFileSystem(), faults: faults) },
            now: t0)
        try await store("before", in: keys, now: t0, expiresAt: t0.addingTimeInterval(600))
        // A segment's sync: under load, a background index checkpoint's sync
        // could take the one fault first, and a checkpoint that cannot be
        // written only waits for the next (the log goes on).
        _ = faults.install(.nthCall(1, of: .synchronize, paths: .suffix(".seg")))
        await #expect(throws: IdempotencyKeyStoreError.self) {
            _ = try await keys.begin(key: "during", fingerprint: [1], now: t0, claim: claim)
        }
        faults.removeAllRules()
        await #expect(throws: IdempotencyKeyStoreError.self) {
            _ = try await keys.begin(key: "after", fingerprint: [1], now: t0, claim: claim)
        }
        // Replays are refused too (503, retried later): a failed sync leaves
        // what is on disk unknown until the log is reopened.
        await #expect(throws: IdempotencyKeyStoreError.self) {
            _ = try await keys.begin(key: "before", fingerprint: Array("before".utf8), now: t0, claim: claim)
        }
        _ = try? await keys.close()
        let reopened = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        #expect(try await replayed("before", in: reopened, now: t0) != nil, "completed keys are answered after the reopen")
        try await reopened.close()
    }

    @Test("a second open of the same directory is refused; files are 0600, the directory 0700")
    func lockAndPermissions() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        try await store("p", in: keys, now: t0, expiresAt: t0.addingTimeInterval(600))
        await #expect(throws: IdempotencyKeyStoreError.self) { _ = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0) }
        let secret = try FileManager.default.attributesOfItem(atPath: directory + "/keys.secret")
        #expect((secret[.posixPermissions] as? Int) == 0o600)
        #expect((try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int) == 0o700)
        try await keys.close()
    }

    @Test("client keys are indexed by a keyed digest: each store has its own secret, so digests cannot be predicted")
    func seededDigests() async throws {
        let a = KeyDigester(secret: Array(repeating: 1, count: 32))
        let b = KeyDigester(secret: Array(repeating: 2, count: 32))
        #expect(a.digest("same-key") == a.digest("same-key"))
        #expect(a.digest("same-key") != b.digest("same-key"))
        let one = temporaryDirectory(), two = temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: one)
            try? FileManager.default.removeItem(atPath: two)
        }
        let first = try await LogIdempotencyKeyStore.open(at: .init(one), now: t0)
        let second = try await LogIdempotencyKeyStore.open(at: .init(two), now: t0)
        #expect(first.digester.digest("k") != second.digester.digest("k"))
        try await first.close()
        try await second.close()
    }
}
