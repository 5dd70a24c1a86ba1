import Foundation
import IdempotencyKeyMiddleware
import IdempotencyKeyPostgres
import PostgresNIO
import Testing

/// A claim while its request still runs on a live node: sweeps on other
/// nodes, and another node that marks it abandoned too early (its clock is
/// ahead, or the request outlived `staleAfter`).
@Suite(
    "PostgreSQL key store: claims of running requests", .serialized, .timeLimit(.minutes(5)),
    .needsPostgres)
struct PostgresRunningClaimTests {
    static let now = Date(timeIntervalSince1970: 1_900_000_000)
    static let response = StoredResponse(status: 201, headers: ["content-type": "application/json"], body: Array(#"{"id":"o-1"}"#.utf8))

    static func claim(_ owner: String, at time: Date = now, retention: TimeInterval = 3600) -> IdempotencyClaim {
        IdempotencyClaim(owner: owner, staleAfter: .seconds(60), expiresAt: time.addingTimeInterval(retention))
    }

    @Test("a sweep never deletes the claim of a request that may still run: past its expiry, only once it is stale too")
    func sweepKeepsRunningClaim() async throws {
        try await PostgresTestDatabase.withStore(configure: { $0.staleAfter = .seconds(60) }) { store, _ async throws in
            let model = InMemoryIdempotencyKeyStore()
            // Retention (10 s) shorter than the request: its claim expires while it runs.
            let slow = Self.claim("me", retention: 10)
            #expect(try await store.begin(key: "slow", fingerprint: [1], now: Self.now, claim: slow) == .proceed)
            #expect(try await model.begin(key: "slow", fingerprint: [1], now: Self.now, claim: slow) == .proceed)
            let later = Self.now.addingTimeInterval(20)
            #expect(try await store.expire(now: later) == 0)
            #expect(try await model.expire(now: later) == 0)
            // Another node must not run it a second time alongside.
            let other = Self.claim("them", at: later)
            #expect(try await model.begin(key: "slow", fingerprint: [1], now: later, claim: other) == .inProgress)
            #expect(try await store.begin(key: "slow", fingerprint: [1], now: later, claim: other) == .inProgress)
            // Expired and stale: its server is gone; the sweep may forget it.
            #expect(try await store.expire(now: Self.now.addingTimeInterval(60)) == 1)
        }
    }

    @Test("a handler recording its response in its transaction after another node marked its claim abandoned: committed, and replayed")
    func transactionCompletesAbandonedClaim() async throws {
        try await PostgresTestDatabase.withStore { store, client in
            let logger = PostgresTestDatabase.logger
            let orders = "test_orders_" + UUID().uuidString.prefix(8).lowercased()
            try await client.query(PostgresQuery(unsafeSQL: "CREATE TABLE \(orders) (id text PRIMARY KEY)"), logger: logger)
            #expect(try await store.begin(key: "skewed", fingerprint: [1], now: Self.now, claim: Self.claim("me")) == .proceed)
            // A node whose clock is 61 s ahead finds the fresh claim stale.
            let ahead = Self.now.addingTimeInterval(61)
            let marked = try await store.begin(key: "skewed", fingerprint: [1], now: ahead, claim: Self.claim("them", at: ahead))
            #expect(marked == .outcomeUnknown(IdempotencyUnsettledKey(
                key: "skewed", since: Self.now, expiresAt: Self.now.addingTimeInterval(3600), reason: .claimAbandoned)))
            // The handler is alive and finishes: its write and its key commit together.
            try await store.withTransaction { connection in
                try await connection.query(PostgresQuery(unsafeSQL: "INSERT INTO \(orders) VALUES ('o-1')"), logger: logger)
                try await store.complete(
                    key: "skewed", response: Self.response, expiresAt: Self.now.addingTimeInterval(3600), owner: "me", on: connection, logger: logger)
            }
            #expect(try await store.begin(key: "skewed", fingerprint: [1], now: ahead, claim: Self.claim("them", at: ahead)) == .completed(Self.response))
            let rows = try await client.query(PostgresQuery(unsafeSQL: "SELECT id FROM \(orders)"), logger: logger).collect()
            #expect(try rows.map { try $0.decode(String.self) } == ["o-1"])
            // Another owner cannot record into it.
            #expect(try await store.begin(key: "taken", fingerprint: [1], now: Self.now, claim: Self.claim("me")) == .proceed)
            _ = try await store.begin(key: "taken", fingerprint: [1], now: ahead, claim: Self.claim("them", at: ahead))
            let refused = await #expect(throws: PostgresIdempotencyKeyStoreError.self) {
                try await store.withTransaction { connection in
                    try await store.complete(
                        key: "taken", response: Self.response, expiresAt: Self.now.addingTimeInterval(60), owner: "them", on: connection, logger: logger)
                }
            }
            #expect(refused?.code == .claimLost)
            try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(orders)"), logger: logger)
        }
    }

    @Test("a handler that applied nothing after another node marked its claim abandoned: its release frees the key")
    func releaseOfAbandonedClaim() async throws {
        try await PostgresTestDatabase.withStore { store, _ async throws in
            let ahead = Self.now.addingTimeInterval(61)
            for key in ["released", "not-mine", "ran"] {
                #expect(try await store.begin(key: key, fingerprint: [1], now: Self.now, claim: Self.claim("me")) == .proceed)
            }
            // "ran": its handler ran, the response could not be stored.
            try await store.settleUnknown(key: "ran", owner: "me", now: Self.now, expiresAt: Self.now.addingTimeInterval(3600))
            for key in ["released", "not-mine"] {
                guard case .outcomeUnknown = try await store.begin(key: key, fingerprint: [1], now: ahead, claim: Self.claim("them", at: ahead)) else {
                    Issue.record("\(key): the claim was not marked abandoned")
                    continue
                }
            }
            try await store.abandon(key: "released", owner: "me")
            try await store.abandon(key: "not-mine", owner: "them")
            try await store.abandon(key: "ran", owner: "me")
            #expect(try await store.begin(key: "released", fingerprint: [1], now: ahead, claim: Self.claim("them", at: ahead)) == .proceed)
            guard case .outcomeUnknown = try await store.begin(key: "not-mine", fingerprint: [1], now: ahead, claim: Self.claim("them", at: ahead)) else {
                Issue.record("another owner released a claim that was not its own")
                return
            }
            guard case .outcomeUnknown(let ran) = try await store.begin(key: "ran", fingerprint: [1], now: ahead, claim: Self.claim("them", at: ahead)) else {
                Issue.record("a key whose handler ran was released")
                return
            }
            #expect(ran.reason == .responseNotRecorded)
        }
    }
}
