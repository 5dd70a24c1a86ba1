import Foundation
import IdempotencyKeyMiddleware
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// What the durable key store refuses rather than forget keys, and what it
/// keeps in memory when its log cannot take a write. Time is the `now:`
/// every call takes.
@Suite("LogIdempotencyKeyStore: never forgets silently", .serialized)
struct LogIdempotencyKeyStoreSafetyTests {
    let t0 = Date(timeIntervalSince1970: 1_900_000_000)
    let claim = IdempotencyClaim(owner: "test", staleAfter: .seconds(60), expiresAt: Date(timeIntervalSince1970: 1_900_003_600))

    func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("idem-safety-\(UUID().uuidString)").path
    }

    @Test("a directory of the earlier key journal is refused, and left as it was", arguments: ["journal.secret", "keys-00000001.journal"])
    func earlierJournalRefused(file: String) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: directory + "/" + file, contents: Data([1, 2, 3]))
        let error = await #expect(throws: IdempotencyKeyStoreError.self) {
            _ = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        }
        #expect(error?.code == .invalidArgument && error?.message.contains(file) == true, "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [file])
    }

    @Test("a log holding keys whose digest secret is gone is refused, never keyed by a new secret")
    func missingSecretRefused() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        #expect(try await keys.begin(key: "k", fingerprint: [1], now: t0, claim: claim) == .proceed)
        try await keys.complete(key: "k", response: StoredResponse(status: 201, headers: [:], body: [1]), now: t0, expiresAt: t0.addingTimeInterval(600))
        try await keys.close()
        try FileManager.default.removeItem(atPath: directory + "/keys.secret")
        let error = await #expect(throws: IdempotencyKeyStoreError.self) {
            _ = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        }
        #expect(error?.code == .damaged, "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: directory + "/keys.secret"), "no new secret was made")
    }

    @Test(
        "a stale, expired claim of another server over an expired completed record: the key is claimed afresh, once",
        .timeLimit(.minutes(5)))
    func staleExpiredClaimOverExpiredCompletion() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), now: t0)
        let first = IdempotencyClaim(owner: "a", staleAfter: .seconds(60), expiresAt: t0.addingTimeInterval(1000))
        #expect(try await keys.begin(key: "k", fingerprint: [1], now: t0, claim: first) == .proceed)
        try await keys.complete(key: "k", response: StoredResponse(status: 201, headers: [:], body: [1]), now: t0, expiresAt: t0.addingTimeInterval(10))
        // The completion expired: server a claims the key again, and dies.
        let again = IdempotencyClaim(owner: "a", staleAfter: .seconds(60), expiresAt: t0.addingTimeInterval(30))
        #expect(try await keys.begin(key: "k", fingerprint: [1], now: t0.addingTimeInterval(20), claim: again) == .proceed)
        // Much later, server b: a's claim is stale and expired, and the
        // completed record is still in the log, expired.
        let other = IdempotencyClaim(owner: "b", staleAfter: .seconds(60), expiresAt: t0.addingTimeInterval(2000))
        let later = t0.addingTimeInterval(100)
        #expect(try await keys.begin(key: "k", fingerprint: [1], now: later, claim: other) == .proceed)
        #expect(try await keys.begin(key: "k", fingerprint: [1], now: later, claim: other) == .inProgress)
        try await keys.close()
    }

    @Test("an unknown outcome the log cannot take is still held in memory: the key answers outcome-unknown, never in progress")
    func unknownOutcomeHeldWhenTheLogFails() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let faults = FaultInjector()
        var configuration = LogIdempotencyKeyStore.Configuration()
        configuration.fileSystem = FaultInjectingFileSystem(wrapping: PosixFileSystem(), faults: faults)
        let keys = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: configuration, now: t0)
        #expect(try await keys.begin(key: "k", fingerprint: [1], now: t0, claim: claim) == .proceed)
        // A failed sync of the log's segment poisons the log: from then on
        // it takes no write. (Only the segment's: a background index
        // checkpoint syncs a file of its own, and its failure poisons
        // nothing; under load it could take the fault first.)
        _ = faults.install(.nthCall(1, of: .synchronize, paths: .suffix(".seg")))
        await #expect(throws: IdempotencyKeyStoreError.self) {
            _ = try await keys.begin(key: "other", fingerprint: [2], now: t0, claim: claim)
        }
        faults.removeAllRules()
        await #expect(throws: IdempotencyKeyStoreError.self) {
            try await keys.settleUnknown(key: "k", owner: "test", now: t0, expiresAt: t0.addingTimeInterval(600))
        }
        guard case .outcomeUnknown(let unsettled) = try await keys.begin(key: "k", fingerprint: [1], now: t0, claim: claim) else {
            Issue.record("the key was not answered outcome-unknown")
            return
        }
        #expect(unsettled.reason == .responseNotRecorded)
        _ = try? await keys.close()
    }
}
