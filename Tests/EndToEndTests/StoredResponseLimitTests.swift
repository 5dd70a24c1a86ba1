import Foundation
@testable import IdempotencyKeyMiddleware
import OutboxLog
import Testing

/// A replay never differs from the original: a response too large to keep
/// is sent in full once, and its key answers repeats with a clear 410.
@Suite("Idempotency-Key responses too large to store", .serialized, .timeLimit(.minutes(5)))
struct StoredResponseLimitTests {
    @Test("a response over maximumStoredResponse is sent in full; repeats get 410 response-not-stored, never a cut body", arguments: StoreKind.allCases)
    func tooLargeToStore(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let server = try await IdempotencyTestServer.start(store: keys.store) { $0.maximumStoredResponse = 1024 }
        let first = try await server.post("/reports?size=5000", key: "big-1")
        #expect(first.status == 201)
        #expect(first.body.utf8.count == 5000)
        let repeated = try await server.post("/reports?size=5000", key: "big-1")
        #expect(repeated.status == 410)
        #expect(repeated.headers["content-type"] == "application/problem+json")
        #expect(repeated.headers["idempotent-replayed"] == "true")
        let problem = try #require(repeated.json)
        #expect(problem["type"] as? String == IdempotencyProblem.responseNotStored.type)
        let detail = try #require(problem["detail"] as? String)
        #expect(detail.contains("HTTP 201") && detail.contains("5000 bytes") && detail.contains("1024"))
        #expect(!repeated.body.contains("report-1:x"))
        #expect(server.created.count == 1)
        // At the limit, the response is kept and replayed byte for byte.
        let fits = try await server.post("/reports?size=1024", key: "big-2")
        let fitsAgain = try await server.post("/reports?size=1024", key: "big-2")
        #expect(fitsAgain.status == 201)
        #expect(fitsAgain.body == fits.body)
        #expect(fitsAgain.body.utf8.count == 1024)
        #expect(server.created.count == 2)
        await server.stop()
        await keys.remove()
    }

    @Test("a response the log store refuses (over its record size) keeps the key as response-not-stored, not a second run")
    func storeRefusesRecord() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("idem-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = LogIdempotencyKeyStore.Configuration()
        configuration.maximumRecordSize = 8 << 10
        let store = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: configuration)
        let server = try await IdempotencyTestServer.start(store: store)  // maximumStoredResponse: 1 MiB
        let first = try await server.post("/reports?size=20000", key: "big-3")
        #expect(first.status == 201)
        #expect(first.body.utf8.count == 20000)
        let repeated = try await server.post("/reports?size=20000", key: "big-3")
        #expect(repeated.status == 410)
        #expect(repeated.json?["type"] as? String == IdempotencyProblem.responseNotStored.type)
        #expect(server.created.count == 1)
        await server.stop()
        try await store.close()
    }

    @Test("a response with a replayed header longer than a store keeps is sent in full once; repeats get 410, never a cut header")
    func headerTooLongToStore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("idem-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: LogIdempotencyKeyStore.Configuration())
        let server = try await IdempotencyTestServer.start(store: store)
        let first = try await server.post("/reports?size=10&location=70000", key: "long-1")
        #expect(first.status == 201)
        #expect(first.headers["location"]?.utf8.count == 70000)
        let repeated = try await server.post("/reports?size=10&location=70000", key: "long-1")
        #expect(repeated.status == 410)
        #expect(repeated.json?["type"] as? String == IdempotencyProblem.responseNotStored.type)
        #expect(server.created.count == 1)
        await server.stop()
        try await store.close()
        // The store reopens: nothing cut inside a character was written.
        let reopened = try await LogIdempotencyKeyStore.open(at: .init(directory), configuration: LogIdempotencyKeyStore.Configuration())
        try await reopened.close()
    }
}
