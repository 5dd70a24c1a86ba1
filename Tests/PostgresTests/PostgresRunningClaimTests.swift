import Foundation
import IdempotencyKeyMiddleware
import IdempotencyKeyPostgres
import PostgresNIO
import Testing

/// A claim while its request still runs on a live node: sweeps on other
/// nodes.
@Suite(
    "PostgreSQL key store: claims of running requests", .serialized, .timeLimit(.minutes(3)),
    .enabled(if: PostgresTestDatabase.enabled, "OUTBOX_POSTGRES_URL is not set: export OUTBOX_POSTGRES_URL=$(Scripts/postgres/start.sh)"))
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
}
