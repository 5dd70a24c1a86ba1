import Foundation
@testable import IdempotencyKeyMiddleware
import OutboxLocking
import Testing

/// A key store that fails the operations it is told to, for as long as it
/// is told to, in front of an in-memory store.
final class FailingKeyStore: IdempotencyKeyStore {
    enum Operation: String, CaseIterable, Sendable { case begin, complete, abandon, settleUnknown, expire }
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
    func settleUnknown(key: String, owner: String, now: Date, expiresAt: Date) async throws {
        try check(.settleUnknown)
        try await base.settleUnknown(key: key, owner: owner, now: now, expiresAt: expiresAt)
    }
    func resolve(key: String, as resolution: IdempotencyResolution, now: Date) async throws {
        try await base.resolve(key: key, as: resolution, now: now)
    }
    func unsettledKeys(now: Date, limit: Int) async throws -> [IdempotencyUnsettledKey] {
        try await base.unsettledKeys(now: now, limit: limit)
    }
    func expire(now: Date) async throws -> Int {
        try check(.expire)
        return try await base.expire(now: now)
    }
}

/// The middleware never runs a handler twice for one key, whichever store
/// operation fails, and never runs it when the claim cannot be recorded.
@Suite("Idempotency-Key middleware with a failing key store", .serialized, .timeLimit(.minutes(5)))
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

    @Test("complete fails: the first request gets its answer, repeats get 503 outcome-unknown and never run it again")
    func completeFails() async throws {
        let keys = FailingKeyStore()
        let clock = TestClock()
        let server = try await IdempotencyTestServer.start(store: keys, clock: clock)
        keys.fail([.complete])
        let first = try await server.post(key: "f-complete")
        #expect(first.status == 201, "the handler's real answer still reaches the first request")
        #expect(server.created.count == 1)
        keys.fail([])
        let repeated = try await server.post(key: "f-complete")
        #expect(server.created.count == 1, "the handler ran a second time for one key")
        #expect(repeated.status == 503)
        #expect(repeated.headers["retry-after"] == "60")
        #expect(repeated.json?["type"] as? String == IdempotencyProblem.outcomeUnknown.type)
        #expect(keys.calls(.complete) == 2, "the response, then the 410 marker")
        // The operator sees the key and resolves it as applied with the answer it found.
        let unsettled = try await keys.unsettledKeys(now: clock.date, limit: 10)
        #expect(unsettled.map(\.key) == ["f-complete"])
        #expect(unsettled.first?.reason == .responseNotRecorded)
        let found = StoredResponse(status: 201, headers: ["content-type": "application/json"], body: Array(first.body.utf8))
        try await keys.resolve(key: "f-complete", as: .applied(found, expiresAt: clock.date.addingTimeInterval(3600)), now: clock.date)
        let replayed = try await server.post(key: "f-complete")
        #expect(replayed.status == 201)
        #expect(replayed.body == first.body)
        #expect(replayed.headers["idempotent-replayed"] == "true")
        #expect(server.created.count == 1)
        await server.stop()
    }

    @Test("complete and settleUnknown fail: the middleware itself answers outcome-unknown, and hands it to the store once it recovers")
    func completeAndSettleFail() async throws {
        let keys = FailingKeyStore()
        let clock = TestClock()
        let server = try await IdempotencyTestServer.start(store: keys, clock: clock)
        keys.fail([.complete, .settleUnknown])
        #expect(try await server.post(key: "f-settle").status == 201)
        let whileDown = try await server.post(key: "f-settle")
        #expect(whileDown.status == 503)
        #expect(whileDown.json?["type"] as? String == IdempotencyProblem.outcomeUnknown.type)
        keys.fail([])
        let afterRecovery = try await server.post(key: "f-settle")
        #expect(afterRecovery.status == 503)
        #expect(afterRecovery.json?["type"] as? String == IdempotencyProblem.outcomeUnknown.type)
        #expect(try await keys.unsettledKeys(now: clock.date, limit: 10).map(\.key) == ["f-settle"])
        #expect(server.created.count == 1)
        // Resolved as not applied: the next request with the key runs.
        try await keys.resolve(key: "f-settle", as: .notApplied, now: clock.date)
        let rerun = try await server.post(key: "f-settle")
        #expect(rerun.status == 201)
        #expect(rerun.headers["idempotent-replayed"] == nil)
        #expect(server.created.count == 2)
        await server.stop()
    }

    @Test("an outcome-unknown key is forgotten when it expires, and only then runs again")
    func unknownExpires() async throws {
        let keys = FailingKeyStore()
        let clock = TestClock()
        let server = try await IdempotencyTestServer.start(store: keys, clock: clock) { $0.expiryInterval = nil }
        keys.fail([.complete])
        _ = try await server.post(key: "f-expiry")
        keys.fail([])
        clock.advance(by: 3599)
        #expect(try await server.post(key: "f-expiry").status == 503)
        clock.advance(by: 2)
        #expect(try await keys.expire(now: clock.date) == 1)
        #expect(try await server.post(key: "f-expiry").status == 201)
        #expect(server.created.count == 2)
        await server.stop()
    }

    @Test("resolving a key whose outcome is known is refused")
    func resolveRefused() async throws {
        let keys = FailingKeyStore()
        let clock = TestClock()
        let server = try await IdempotencyTestServer.start(store: keys, clock: clock)
        _ = try await server.post(key: "f-known")
        await #expect(throws: IdempotencyKeyStoreError.self) {
            try await keys.resolve(key: "f-known", as: .notApplied, now: clock.date)
        }
        #expect(try await server.post(key: "f-known").headers["idempotent-replayed"] == "true")
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
