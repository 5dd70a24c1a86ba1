import Foundation
import IdempotencyKeyMiddleware
import IdempotencyKeyPostgres
import PostgresNIO
import Testing

/// A database that cannot be reached must refuse requests, not hang them:
/// PostgresNIO's pool waits for a connection for as long as it takes.
@Suite("PostgreSQL key store without a database", .timeLimit(.minutes(5)))
struct PostgresUnreachableTests {
    @Test("open against a port nobody listens on fails with unavailable after connectionWait")
    func openUnreachable() async throws {
        var configuration = PostgresIdempotencyKeyStore.Configuration()
        configuration.connectionWait = .milliseconds(500)
        // Port 1 on loopback: connections are refused, the pool retries forever.
        let client = PostgresClient(
            configuration: try PostgresIdempotencyKeyStore.clientConfiguration(url: "postgres://postgres@127.0.0.1:1/postgres", configuration: configuration))
        let running = Task { await client.run() }
        defer { running.cancel() }
        let error = await #expect(throws: PostgresIdempotencyKeyStoreError.self) {
            _ = try await PostgresIdempotencyKeyStore.open(client: client, configuration: configuration, logger: PostgresTestDatabase.logger)
        }
        #expect(error?.code == .unavailable)
    }
}

@Suite(
    "PostgreSQL key store with every connection busy", .timeLimit(.minutes(5)),
    .needsPostgres)
struct PostgresBusyTests {
    @Test("a claim that cannot get a connection within connectionWait fails (503 before the handler), and the next one after it succeeds")
    func poolExhausted() async throws {
        var configuration = PostgresIdempotencyKeyStore.Configuration()
        configuration.table = PostgresTestDatabase.freshTable()
        configuration.maximumConnections = 1
        configuration.connectionWait = PostgresTestDatabase.connectionWait
        let client = PostgresClient(
            configuration: try PostgresIdempotencyKeyStore.clientConfiguration(url: try await PostgresTestDatabase.requireURL(), configuration: configuration))
        let running = Task { await client.run() }
        defer { running.cancel() }
        // Opened with a patient wait (the pool's one connection is made
        // here), then the store under test, with a short one, on it.
        _ = try await PostgresIdempotencyKeyStore.open(client: client, configuration: configuration, logger: PostgresTestDatabase.logger)
        configuration.connectionWait = .milliseconds(300)
        let store = try await PostgresIdempotencyKeyStore.open(client: client, configuration: configuration, logger: PostgresTestDatabase.logger)
        let now = Date(timeIntervalSince1970: 1_900_000_000)
        let claim = IdempotencyClaim(owner: "me", staleAfter: .seconds(60), expiresAt: now.addingTimeInterval(3600))
        let (held, heldSignal) = AsyncStream<Void>.makeStream()
        let (release, releaseSignal) = AsyncStream<Void>.makeStream()
        // The pool's one connection, held by a long application transaction.
        let holder = Task {
            try await store.withTransaction { _ in
                heldSignal.yield()
                for await _ in release { break }
            }
        }
        for await _ in held { break }
        let error = await #expect(throws: PostgresIdempotencyKeyStoreError.self) {
            _ = try await store.begin(key: "waiting", fingerprint: [1], now: now, claim: claim)
        }
        #expect(error?.code == .unavailable)
        releaseSignal.finish()
        try await holder.value
        // Nothing was claimed by the refused call.
        #expect(try await store.begin(key: "waiting", fingerprint: [1], now: now, claim: claim) == .proceed)
        try await PostgresTestDatabase.drop(configuration.table, on: client)
    }
}
