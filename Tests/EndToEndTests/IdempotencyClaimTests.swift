import Foundation
import Hummingbird
@testable import IdempotencyKeyMiddleware
import Testing

/// When an in-progress key may be run again: never while this server
/// process still runs it; a claim left by another instance once it is stale.
@Suite("Idempotency-Key claims and staleness", .serialized, .timeLimit(.minutes(5)))
struct IdempotencyClaimTests {
    @Test("a request this server still runs is never re-run, however long past staleAfter", arguments: StoreKind.allCases)
    func ownClaimNeverStale(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let clock = TestClock()
        let gate = Gate()
        let server = try await IdempotencyTestServer.start(store: keys.store, clock: clock, gate: gate) { $0.staleAfter = .seconds(60) }
        let first = Task { try await server.post(key: "slow-1") }
        await gate.waitForArrival()
        clock.advance(by: 3 * 3600)
        let retry = try await server.post(key: "slow-1")
        #expect(retry.status == 409)
        #expect(retry.headers["retry-after"] != nil)
        #expect(gate.entered == 1, "the request ran a second time alongside the first")
        gate.open()
        #expect(try await first.value.status == 201)
        #expect(server.created.count == 1)
        #expect(try await server.post(key: "slow-1").headers["idempotent-replayed"] == "true")
        await server.stop()
        await keys.remove()
    }

    @Test("a claim left by another server instance is 409 until staleAfter, then outcome-unknown: never run again", arguments: StoreKind.allCases)
    func foreignClaimNeverRerun(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let clock = TestClock()
        let server = try await IdempotencyTestServer.start(store: keys.store, clock: clock) { $0.staleAfter = .seconds(60) }
        // Another server instance claimed the key for the same request, then died.
        let fingerprint = IdempotencyHTTP.fingerprint(method: "POST", uri: "/orders", body: Array("{}".utf8))
        let left = try await keys.store.begin(
            key: "orphan-1", fingerprint: fingerprint, now: clock.date,
            claim: IdempotencyClaim(owner: "server-that-crashed", staleAfter: .seconds(60), expiresAt: clock.date.addingTimeInterval(3600)))
        #expect(left == .proceed)
        clock.advance(by: 30)
        #expect(try await server.post(key: "orphan-1").status == 409)
        clock.advance(by: 30)
        let stale = try await server.post(key: "orphan-1")
        #expect(stale.status == 503)
        #expect(stale.headers["retry-after"] != nil)
        #expect(stale.json?["type"] as? String == IdempotencyProblem.outcomeUnknown.type)
        #expect(server.created.count == 0, "a claim whose handler may have applied the write was run again")
        let unsettled = try await keys.store.unsettledKeys(now: clock.date, limit: 5)
        #expect(unsettled.map(\.key) == ["orphan-1"])
        #expect(unsettled.first?.reason == .claimAbandoned)
        // Past the claim's expiry the key is forgotten, and only then runs.
        clock.advance(by: 3600)
        #expect(try await server.post(key: "orphan-1").status == 201)
        #expect(server.created.count == 1)
        await server.stop()
        await keys.remove()
    }

    @Test("abandon releases only the owner's own claim", arguments: StoreKind.allCases)
    func abandonChecksOwner(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let now = Date(timeIntervalSince1970: 1_900_000_000)
        let mine = IdempotencyClaim(owner: "me", staleAfter: .seconds(60))
        let theirs = IdempotencyClaim(owner: "them", staleAfter: .seconds(60))
        #expect(try await keys.store.begin(key: "k", fingerprint: [1], now: now, claim: theirs) == .proceed)
        // "me" abandoning "them"'s claim changes nothing.
        try await keys.store.abandon(key: "k", owner: "me")
        #expect(try await keys.store.begin(key: "k", fingerprint: [1], now: now.addingTimeInterval(1), claim: mine) == .inProgress)
        try await keys.store.abandon(key: "k", owner: "them")
        #expect(try await keys.store.begin(key: "k", fingerprint: [1], now: now.addingTimeInterval(2), claim: mine) == .proceed)
        await keys.remove()
    }

    @Test(
        "a body slower to arrive than staleAfter is claimed when it has arrived: another node answers 409, not outcome-unknown",
        arguments: StoreKind.allCases)
    func slowBodyClaimIsFresh(kind: StoreKind) async throws {
        let keys = try await kind.make()
        let clock = TestClock()
        let reading = Gate()
        let gate = Gate()
        // Two nodes on one store, as with PostgreSQL; node A's clock reads are
        // counted so the test knows its middleware has the request.
        let nodeA = try await IdempotencyTestServer.start(store: keys.store, clock: clock, gate: gate) {
            $0.serverInstance = "node-a"
            $0.staleAfter = .seconds(60)
            $0.now = { reading.arrive(); return clock.date }
        }
        let nodeB = try await IdempotencyTestServer.start(store: keys.store, clock: clock) {
            $0.serverInstance = "node-b"
            $0.staleAfter = .seconds(60)
        }
        let body = #"{"photo":"a slow upload"}"#
        let upload = try await RawConnection.connect(port: nodeA.port)
        #expect(await upload.send(
            "POST /orders HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: slow-body-1\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
                + body.prefix(5)))
        await reading.waitForArrival()
        // The rest of the body arrives two staleAfter later.
        clock.advance(by: 120)
        #expect(await upload.send(String(body.dropFirst(5))))
        await gate.waitForArrival()
        let retry = try await nodeB.post(key: "slow-body-1", body: body)
        #expect(retry.status == 409, "the claim was stored already stale: \(retry.status) \(retry.body)")
        #expect(retry.json?["type"] as? String != IdempotencyProblem.outcomeUnknown.type)
        gate.open()
        if case .data(let answer) = await upload.next(within: 10_000) {
            #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 201"))
        } else {
            Issue.record("node A never answered the upload")
        }
        #expect(nodeA.created.count == 1)
        upload.close()
        await nodeA.stop()
        await nodeB.stop()
        await keys.remove()
    }

    @Test("two middlewares of one process share an owner: neither takes over the other's running request")
    func oneOwnerPerProcess() {
        let a = IdempotencyMiddleware<BasicRequestContext>.Configuration()
        let b = IdempotencyMiddleware<BasicRequestContext>.Configuration()
        #expect(a.serverInstance == b.serverInstance)
        #expect(a.serverInstance == IdempotencyServerInstance.current)
    }
}
