import Foundation
@testable import IdempotencyKeyMiddleware
import OutboxLocking
import Testing

/// A key store that fails the operations it is told to, for as long as it
/// is told to, in front of an in-memory store.
final class FailingKeyStore: IdempotencyKeyStore {
    enum Operation: String, CaseIterable, Sendable { case begin, complete, abandon, expire }
    struct Injected: Error {}

    let base = InMemoryIdempotencyKeyStore()
    private let failing = Locked<Set<Operation>>([])
    private let calls = Locked<[Operation: Int]>([:])

    func fail(_ operations: Set<Operation>) { failing.withLock { $0 = operations } }
    func calls(_ operation: Operation) -> Int { calls.withLock { $0[operation] ?? 0 } }

    private func check(_ operation: Operation) throws {
        calls.withLock { $0[operation, default: 0] += 1 }
        if failing.withLock({ $0.contains(operation) }) { throw Injected() }
    }

    func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult {
        try check(.begin)
        return try await base.begin(key: key, fingerprint: fingerprint, now: now, claim: claim)
    }
    func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        try check(.complete)
        try await base.complete(key: key, response: response, now: now, expiresAt: expiresAt)
    }
    func abandon(key: String, owner: String) async throws {
        try check(.abandon)
        try await base.abandon(key: key, owner: owner)
    }
    func expire(now: Date) async throws -> Int {
        try check(.expire)
        return try await base.expire(now: now)
    }
}

/// The middleware never runs a handler twice for one key, whichever store
/// operation fails, and never runs it when the claim cannot be recorded.
@Suite("Idempotency-Key middleware with a failing key store", .serialized, .timeLimit(.minutes(1)))
struct KeyStoreFailureTests {
    @Test("begin fails: 503 store-unavailable with Retry-After, and the handler does not run")
    func beginFails() async throws {
        let keys = FailingKeyStore()
        let server = try await IdempotencyTestServer.start(store: keys)
        keys.fail([.begin])
        let refused = try await server.post(key: "f-begin")
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] != nil)
        #expect(refused.json?["type"] as? String == IdempotencyProblem.storeUnavailable.type)
        #expect(server.created.count == 0)
        keys.fail([])
        #expect(try await server.post(key: "f-begin").status == 201)
        #expect(server.created.count == 1)
        await server.stop()
    }

    @Test("complete fails: the first request gets its answer, repeats are never run again")
    func completeFails() async throws {
        let keys = FailingKeyStore()
        let server = try await IdempotencyTestServer.start(store: keys)
        keys.fail([.complete])
        _ = try await server.post(key: "f-complete")
        #expect(server.created.count == 1)
        keys.fail([])
        let repeated = try await server.post(key: "f-complete")
        #expect(server.created.count == 1, "the handler ran a second time for one key")
        #expect(repeated.status != 201 || repeated.headers["idempotent-replayed"] == "true")
        await server.stop()
    }

    @Test("abandon fails after a 5xx: the claim is released once the store recovers, and the retry runs")
    func abandonFails() async throws {
        let keys = FailingKeyStore()
        let server = try await IdempotencyTestServer.start(store: keys)
        keys.fail([.abandon])
        #expect(try await server.post("/flaky", key: "f-abandon").status == 503)
        keys.fail([])
        let retry = try await server.post("/flaky", key: "f-abandon")
        #expect(retry.status == 201)
        #expect(retry.headers["idempotent-replayed"] == nil)
        await server.stop()
    }

    @Test("a failing expiry sweep never fails a request")
    func expireFails() async throws {
        let keys = FailingKeyStore()
        let server = try await IdempotencyTestServer.start(store: keys)
        keys.fail([.expire])
        #expect(try await server.post(key: "f-expire").status == 201)
        #expect(keys.calls(.expire) == 1)
        await server.stop()
    }

    @Test("a 5xx answer is never stored: the retry runs the handler again and gets its own answer")
    func serverErrorNotReplayed() async throws {
        let keys = FailingKeyStore()
        let server = try await IdempotencyTestServer.start(store: keys)
        let first = try await server.post("/flaky", key: "f-5xx")
        #expect(first.status == 503)
        let second = try await server.post("/flaky", key: "f-5xx")
        #expect(second.status == 201)
        #expect(second.headers["idempotent-replayed"] == nil)
        #expect(server.created.count == 1)
        let third = try await server.post("/flaky", key: "f-5xx")
        #expect(third.status == 201)
        #expect(third.headers["idempotent-replayed"] == "true")
        #expect(third.body == second.body)
        #expect(server.created.count == 1)
        await server.stop()
    }
}
