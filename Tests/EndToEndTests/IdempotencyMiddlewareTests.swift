import Foundation
@testable import IdempotencyKeyMiddleware
import Testing

/// The Idempotency-Key contract, over real HTTP, against both built-in stores.
@Suite("Idempotency-Key middleware", .serialized, .timeLimit(.minutes(5)))
struct IdempotencyMiddlewareTests {
    @Test("a repeat replays the first response; the write runs once", arguments: StoreKind.allCases)
    func replay(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let server = try await IdempotencyTestServer.start(store: keys.store)
        let first = try await server.post(key: "key-1", body: #"{"item":"book"}"#)
        let second = try await server.post(key: "key-1", body: #"{"item":"book"}"#)
        #expect(first.status == 201)
        #expect(second.status == 201)
        #expect(second.body == first.body)
        #expect(second.headers["content-type"] == "application/json")
        #expect(second.headers["idempotent-replayed"] == "true")
        #expect(first.headers["idempotent-replayed"] == nil)
        #expect(server.created.count == 1)
        // A quoted (Structured Field) key is the same key.
        #expect(try await server.post(key: "\"key-1\"", body: #"{"item":"book"}"#).body == first.body)
        #expect(server.created.count == 1)
        await server.stop()
        await keys.remove()
    }

    @Test("a thrown 4xx (HTTPError) is an answer like a returned one: stored and replayed, the handler not run again", arguments: StoreKind.allCases)
    func thrownClientErrorIsStored(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let server = try await IdempotencyTestServer.start(store: keys.store)
        let first = try await server.post("/refused", key: "key-4xx")
        let second = try await server.post("/refused", key: "key-4xx")
        #expect(first.status == 422)
        #expect(first.body.contains("refused-1"))
        #expect(second.status == 422)
        #expect(second.body == first.body)
        #expect(second.headers["idempotent-replayed"] == "true")
        #expect(server.created.count == 1)
        await server.stop()
        await keys.remove()
    }

    @Test("any other thrown error releases the claim: the handler applied nothing, a retry runs", arguments: StoreKind.allCases)
    func thrownErrorReleases(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let server = try await IdempotencyTestServer.start(store: keys.store)
        #expect(try await server.post("/crashing", key: "key-throw").status == 500)
        let retry = try await server.post("/crashing", key: "key-throw")
        #expect(retry.status == 201)
        #expect(retry.headers["idempotent-replayed"] == nil)
        #expect(try await server.post("/crashing", key: "key-throw").headers["idempotent-replayed"] == "true")
        #expect(server.created.count == 1)
        await server.stop()
        await keys.remove()
    }

    @Test("the same key with a different request is 422; a missing key is 400; a malformed one 400", arguments: StoreKind.allCases)
    func mismatchAndMissing(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let server = try await IdempotencyTestServer.start(store: keys.store)
        _ = try await server.post(key: "key-2", body: #"{"item":"book"}"#)
        let reused = try await server.post(key: "key-2", body: #"{"item":"lamp"}"#)
        #expect(reused.status == 422)
        #expect(reused.headers["content-type"] == "application/problem+json")
        #expect(reused.json?["type"] as? String == IdempotencyProblem.keyReused.type)
        // The same key on another path is another request too.
        #expect(try await server.post("/reports", key: "key-2", body: #"{"item":"book"}"#).status == 422)
        let missing = try await server.post(key: nil)
        #expect(missing.status == 400)
        #expect(missing.json?["type"] as? String == IdempotencyProblem.missingKey.type)
        let tooLong = try await server.post(key: String(repeating: "k", count: 300))
        #expect(tooLong.status == 400)
        #expect(tooLong.json?["type"] as? String == IdempotencyProblem.invalidKey.type)
        #expect(try await server.post(key: "key with spaces").status == 400)
        #expect(server.created.count == 1)
        await server.stop()
        await keys.remove()
    }

    @Test("a repeat while the first still runs is 409 with Retry-After and a problem body; the first then completes", arguments: StoreKind.allCases)
    func inProgress(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let gate = Gate()
        let server = try await IdempotencyTestServer.start(store: keys.store, gate: gate)
        let first = Task { try await server.post(key: "key-3") }
        await gate.waitForArrival()
        let concurrent = try await server.post(key: "key-3")
        #expect(concurrent.status == 409)
        #expect(concurrent.headers["retry-after"] == "1")
        #expect(concurrent.headers["content-type"] == "application/problem+json")
        #expect(concurrent.headers["idempotent-replayed"] == nil)
        let problem = try #require(concurrent.json)
        #expect(problem["type"] as? String == "https://github.com/swift-outbox/problems/in-progress")
        #expect(problem["status"] as? Int == 409)
        #expect(problem["title"] as? String == "Request in progress")
        #expect((problem["detail"] as? String)?.contains("still being processed") == true)
        gate.open()
        #expect(try await first.value.status == 201)
        #expect(server.created.count == 1)
        #expect(try await server.post(key: "key-3").headers["idempotent-replayed"] == "true")
        await server.stop()
        await keys.remove()
    }

    @Test("the 409's Retry-After follows the configuration, rounded up to whole seconds")
    func inProgressRetryAfterConfigured() async throws {
        let keys = try await StoreKind.memory.make()
        let gate = Gate()
        let server = try await IdempotencyTestServer.start(store: keys.store, gate: gate) { $0.inProgressRetryAfter = .milliseconds(2500) }
        let first = Task { try await server.post(key: "key-3b") }
        await gate.waitForArrival()
        let concurrent = try await server.post(key: "key-3b")
        #expect(concurrent.status == 409)
        #expect(concurrent.headers["retry-after"] == "3")
        gate.open()
        _ = try await first.value
        await server.stop()
    }

    @Test("keys past the retention window are deleted by the periodic sweep, no expire call needed", arguments: StoreKind.allCases)
    func expiry(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let clock = TestClock()
        let server = try await IdempotencyTestServer.start(store: keys.store, clock: clock) { $0.expiryInterval = .seconds(60) }
        _ = try await server.post(key: "key-4")
        _ = try await server.post(key: "key-4b")
        clock.advance(by: 1800)
        #expect(try await server.post(key: "key-4").headers["idempotent-replayed"] == "true")
        #expect(keys.count == 2)
        clock.advance(by: 1800)
        // Any request (a GET too) starts the sweep once it is due.
        #expect(try await server.get("/health").status == 200)
        #expect(keys.count == 0)
        // The key is free again: the same key runs as new.
        #expect(try await server.post(key: "key-4").headers["idempotent-replayed"] == nil)
        #expect(server.created.count == 3)
        #expect(keys.count == 1)
        await server.stop()
        await keys.remove()
    }

    @Test("the sweep runs at most once per interval; until then an expired key is only ignored", arguments: StoreKind.allCases)
    func sweepInterval(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let clock = TestClock()
        let server = try await IdempotencyTestServer.start(store: keys.store, clock: clock) { $0.expiryInterval = .seconds(7200) }
        _ = try await server.post(key: "key-5")  // the first request sweeps (nothing yet)
        clock.advance(by: 3601)
        _ = try await server.get("/health")
        #expect(keys.count == 1, "swept before the interval was over")
        // Expired but not yet deleted: still never replayed.
        #expect(try await server.post(key: "key-5").headers["idempotent-replayed"] == nil)
        #expect(server.created.count == 2)
        clock.advance(by: 3600 + 3600)
        _ = try await server.get("/health")
        #expect(keys.count == 0)
        await server.stop()
        await keys.remove()
    }

    @Test("with the sweep off, expired keys stay until expire is called", arguments: StoreKind.allCases)
    func sweepOff(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let clock = TestClock()
        let server = try await IdempotencyTestServer.start(store: keys.store, clock: clock) { $0.expiryInterval = nil }
        _ = try await server.post(key: "key-6")
        clock.advance(by: 7200)
        _ = try await server.get("/health")
        #expect(keys.count == 1)
        #expect(try await keys.store.expire(now: clock.date) == 1)
        #expect(keys.count == 0)
        await server.stop()
        await keys.remove()
    }

    @Test("the log-backed store replays a response after a server restart")
    func durableAcrossRestart() async throws {
        let keys = try await StoreKind.log.make()
        let server = try await IdempotencyTestServer.start(store: keys.store)
        let first = try await server.post(key: "key-7")
        await server.stop()
        try await (keys.store as? LogIdempotencyKeyStore)?.close()

        let reopened = try await LogIdempotencyKeyStore.open(at: .init(keys.directory))
        let again = try await IdempotencyTestServer.start(store: reopened)
        let replayed = try await again.post(key: "key-7")
        #expect(replayed.body == first.body)
        #expect(replayed.headers["idempotent-replayed"] == "true")
        #expect(again.created.count == 0)
        await again.stop()
        try await reopened.close()
        await keys.remove()
    }
}
