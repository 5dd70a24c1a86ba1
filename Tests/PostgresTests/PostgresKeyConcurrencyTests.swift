import Foundation
import IdempotencyKeyMiddleware
import IdempotencyKeyPostgres
import Logging
import PostgresNIO
import Testing

/// Many claims of one key at once, and the response recorded inside the
/// application's own transaction.
@Suite(
    "PostgreSQL key store: concurrency and transactions", .serialized, .timeLimit(.minutes(5)),
    .needsPostgres)
struct PostgresKeyConcurrencyTests {
    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    static func claim(_ owner: String) -> IdempotencyClaim {
        IdempotencyClaim(owner: owner, staleAfter: .seconds(60), expiresAt: now.addingTimeInterval(3600))
    }

    /// 16 claims of each of 12 keys at `now`, from 4 owners at once.
    static func claimAll(_ store: PostgresIdempotencyKeyStore, now: Date) async throws -> [String: [IdempotencyBeginResult]] {
        try await withThrowingTaskGroup(of: (String, IdempotencyBeginResult).self) { group in
            for key in 0..<12 {
                for attempt in 0..<16 {
                    group.addTask {
                        let claim = IdempotencyClaim(owner: "node-\(attempt % 4)", staleAfter: .seconds(60), expiresAt: now.addingTimeInterval(3600))
                        return ("key-\(key)", try await store.begin(key: "key-\(key)", fingerprint: [1], now: now, claim: claim))
                    }
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0, default: []].append($1.1) }
        }
    }

    @Test("16 concurrent claims of each of 12 keys from 4 owners, new and then expired: exactly one proceeds per key")
    func oneClaimWins() async throws {
        try await PostgresTestDatabase.withStore { store, _ in
            // New keys: the INSERT decides.
            for (key, answers) in try await Self.claimAll(store, now: Self.now) {
                #expect(answers.filter { $0 == .proceed }.count == 1, "\(key): \(answers)")
                #expect(answers.allSatisfy { $0 == .proceed || $0 == .inProgress }, "\(key): \(answers)")
                let done = StoredResponse(status: 201, headers: [:], body: [1])
                try await store.complete(key: key, response: done, now: Self.now, expiresAt: Self.now.addingTimeInterval(10))
            }
            // Expired rows: the revision check decides which claim replaces each.
            for (key, answers) in try await Self.claimAll(store, now: Self.now.addingTimeInterval(20)) {
                #expect(answers.filter { $0 == .proceed }.count == 1, "\(key) after expiry: \(answers)")
                #expect(answers.allSatisfy { $0 == .proceed || $0 == .inProgress }, "\(key) after expiry: \(answers)")
            }
        }
    }

    @Test("the response recorded in the application's transaction commits with its write, or neither does")
    func responseInTransaction() async throws {
        try await PostgresTestDatabase.withStore { store, client in
            let logger = PostgresTestDatabase.logger
            let orders = "test_orders_" + UUID().uuidString.prefix(8).lowercased()
            try await client.query(PostgresQuery(unsafeSQL: "CREATE TABLE \(orders) (id text PRIMARY KEY)"), logger: logger)
            defer { Task { try? await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(orders)"), logger: logger) } }
            let response = StoredResponse(status: 201, headers: ["content-type": "application/json"], body: Array(#"{"id":"o-1"}"#.utf8))

            #expect(try await store.begin(key: "order-1", fingerprint: [1], now: Self.now, claim: Self.claim("me")) == .proceed)
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query(PostgresQuery(unsafeSQL: "INSERT INTO \(orders) VALUES ('o-1')"), logger: logger)
                try await store.complete(
                    key: "order-1", response: response, expiresAt: Self.now.addingTimeInterval(60), owner: "me", on: connection, logger: logger)
            }
            // The middleware's own completion afterwards changes nothing.
            let later = StoredResponse(status: 500, headers: [:], body: [])
            try await store.complete(key: "order-1", response: later, now: Self.now, expiresAt: Self.now.addingTimeInterval(60))
            #expect(try await store.begin(key: "order-1", fingerprint: [1], now: Self.now, claim: Self.claim("other")) == .completed(response))

            // A claim this owner does not hold: the transaction rolls back, its write with it.
            #expect(try await store.begin(key: "order-2", fingerprint: [1], now: Self.now, claim: Self.claim("someone-else")) == .proceed)
            let refused = await #expect(throws: PostgresTransactionError.self) {
                try await client.withTransaction(logger: logger) { connection in
                    try await connection.query(PostgresQuery(unsafeSQL: "INSERT INTO \(orders) VALUES ('o-2')"), logger: logger)
                    try await store.complete(
                        key: "order-2", response: response, expiresAt: Self.now.addingTimeInterval(60), owner: "me", on: connection, logger: logger)
                }
            }
            #expect((refused?.closureError as? PostgresIdempotencyKeyStoreError)?.code == .claimLost)
            #expect(refused?.rollbackError == nil)
            let rows = try await client.query(PostgresQuery(unsafeSQL: "SELECT id FROM \(orders) ORDER BY id"), logger: logger).collect()
            #expect(try rows.map { try $0.decode(String.self) } == ["o-1"])
            #expect(try await store.begin(key: "order-2", fingerprint: [1], now: Self.now, claim: Self.claim("other")) == .inProgress)
        }
    }

    @Test("a claim that finds its row held by a transaction longer than the lock timeout is answered in progress, not left waiting")
    func lockWaitIsBounded() async throws {
        try await PostgresTestDatabase.withStore(lockTimeout: .milliseconds(200)) { store, client in
            let logger = PostgresTestDatabase.logger
            let response = StoredResponse(status: 201, headers: [:], body: Array("done".utf8))
            #expect(try await store.begin(key: "held", fingerprint: [1], now: Self.now, claim: Self.claim("me")) == .proceed)
            let (recorded, recordedSignal) = AsyncStream<Void>.makeStream()
            let (release, releaseSignal) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await client.withTransaction(logger: logger) { connection in
                    // An application transaction that recorded the response and is still open.
                    try await store.complete(
                        key: "held", response: response, expiresAt: Self.now.addingTimeInterval(60), owner: "me", on: connection, logger: logger)
                    recordedSignal.yield()
                    for await _ in release { break }
                }
            }
            for await _ in recorded { break }
            // Another key is not disturbed; the held key waits at most the lock timeout, then 409.
            #expect(try await store.begin(key: "free", fingerprint: [1], now: Self.now, claim: Self.claim("other")) == .proceed)
            #expect(try await store.begin(key: "held", fingerprint: [1], now: Self.now, claim: Self.claim("other")) == .inProgress)
            releaseSignal.finish()
            try await holder.value
            #expect(try await store.begin(key: "held", fingerprint: [1], now: Self.now, claim: Self.claim("other")) == .completed(response))
        }
    }
}
