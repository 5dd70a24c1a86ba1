import Foundation
import IdempotencyKeyMiddleware
import IdempotencyKeyPostgres
import PostgresNIO
import Testing

/// `PostgresIdempotencyKeyStore` against a real PostgreSQL: the store's
/// contract, one call at a time.
@Suite(
    "PostgreSQL key store", .serialized, .timeLimit(.minutes(5)),
    // Skipped only outside CI, and only without a server: the reason is the
    // condition's comment, printed with the skip.
    .needsPostgres)
struct PostgresKeyStoreTests {
    static let start = Date(timeIntervalSince1970: 1_900_000_000)
    static let me = IdempotencyClaim(owner: "me", staleAfter: .seconds(60), expiresAt: start.addingTimeInterval(3600))
    static let them = IdempotencyClaim(owner: "them", staleAfter: .seconds(60), expiresAt: start.addingTimeInterval(3600))
    static let created = StoredResponse(status: 201, headers: ["content-type": "application/json"], body: Array(#"{"id":"msg-1"}"#.utf8))

    @Test("claim, then in progress, key reused, completed and replayed byte for byte")
    func lifecycle() async throws {
        try await PostgresTestDatabase.withStore { store, _ in
            let now = Self.start
            #expect(try await store.begin(key: "k1", fingerprint: [1], now: now, claim: Self.me) == .proceed)
            #expect(try await store.begin(key: "k1", fingerprint: [1], now: now, claim: Self.me) == .inProgress)
            #expect(try await store.begin(key: "k1", fingerprint: [2], now: now, claim: Self.me) == .fingerprintMismatch)
            try await store.complete(key: "k1", response: Self.created, now: now, expiresAt: now.addingTimeInterval(60))
            #expect(try await store.begin(key: "k1", fingerprint: [1], now: now, claim: Self.them) == .completed(Self.created))
            #expect(try await store.begin(key: "k1", fingerprint: [2], now: now, claim: Self.them) == .fingerprintMismatch)
            // Expired: the key runs as new (for any owner), and the sweep deletes it.
            let later = now.addingTimeInterval(61)
            #expect(try await store.begin(key: "k1", fingerprint: [2], now: later, claim: Self.them) == .proceed)
            #expect(try await store.begin(key: "k1", fingerprint: [2], now: later, claim: Self.me) == .inProgress)
        }
    }

    @Test("abandon releases only the owner's own claim; settleUnknown only the owner's")
    func ownerChecks() async throws {
        try await PostgresTestDatabase.withStore { store, _ in
            let now = Self.start
            #expect(try await store.begin(key: "k", fingerprint: [1], now: now, claim: Self.them) == .proceed)
            try await store.abandon(key: "k", owner: "me")
            try await store.settleUnknown(key: "k", owner: "me", now: now, expiresAt: now.addingTimeInterval(60))
            #expect(try await store.begin(key: "k", fingerprint: [1], now: now.addingTimeInterval(1), claim: Self.me) == .inProgress)
            try await store.abandon(key: "k", owner: "them")
            #expect(try await store.begin(key: "k", fingerprint: [1], now: now.addingTimeInterval(2), claim: Self.me) == .proceed)
        }
    }

    @Test("another owner's claim: 409 until stale, then outcome unknown, listed, resolved as not applied, then runs")
    func staleClaim() async throws {
        try await PostgresTestDatabase.withStore { store, _ in
            let now = Self.start
            #expect(try await store.begin(key: "orphan", fingerprint: [7], now: now, claim: Self.them) == .proceed)
            #expect(try await store.begin(key: "orphan", fingerprint: [7], now: now.addingTimeInterval(59), claim: Self.me) == .inProgress)
            let stale = try await store.begin(key: "orphan", fingerprint: [7], now: now.addingTimeInterval(60), claim: Self.me)
            guard case .outcomeUnknown(let unsettled) = stale else {
                Issue.record("expected outcome unknown, got \(stale)")
                return
            }
            #expect(unsettled.reason == .claimAbandoned)
            #expect(unsettled.key == "orphan")
            // Never run again, by anyone, until resolved or expired.
            let again = try await store.begin(key: "orphan", fingerprint: [7], now: now.addingTimeInterval(61), claim: Self.them)
            #expect(again == .outcomeUnknown(unsettled))
            let listed = try await store.unsettledKeys(now: now.addingTimeInterval(62), limit: 10)
            #expect(listed == [unsettled])
            try await store.resolve(key: "orphan", as: .notApplied, now: now.addingTimeInterval(63))
            #expect(try await store.begin(key: "orphan", fingerprint: [7], now: now.addingTimeInterval(64), claim: Self.me) == .proceed)
            await #expect(throws: IdempotencyKeyStoreError.self) {
                try await store.resolve(key: "orphan", as: .notApplied, now: now.addingTimeInterval(65))
            }
        }
    }

    @Test("a response that cannot be stored: outcome unknown until resolved as applied, then replayed")
    func settleAndResolveApplied() async throws {
        try await PostgresTestDatabase.withStore { store, _ in
            let now = Self.start
            #expect(try await store.begin(key: "k", fingerprint: [1], now: now, claim: Self.me) == .proceed)
            try await store.settleUnknown(key: "k", owner: "me", now: now, expiresAt: now.addingTimeInterval(600))
            let unknown = try await store.begin(key: "k", fingerprint: [1], now: now.addingTimeInterval(1), claim: Self.them)
            #expect(unknown == .outcomeUnknown(IdempotencyUnsettledKey(key: "k", since: now, expiresAt: now.addingTimeInterval(600), reason: .responseNotRecorded)))
            try await store.resolve(key: "k", as: .applied(Self.created, expiresAt: now.addingTimeInterval(600)), now: now.addingTimeInterval(2))
            #expect(try await store.begin(key: "k", fingerprint: [1], now: now.addingTimeInterval(3), claim: Self.them) == .completed(Self.created))
            #expect(try await store.unsettledKeys(now: now.addingTimeInterval(3), limit: 10).isEmpty)
        }
    }

    @Test("an operator's listing marks claims older than staleAfter abandoned, as the next request would")
    func listingFindsStaleClaims() async throws {
        try await PostgresTestDatabase.withStore(configure: { $0.staleAfter = .seconds(60) }) { store, _ in
            let now = Self.start
            #expect(try await store.begin(key: "dead", fingerprint: [1], now: now, claim: Self.them) == .proceed)
            #expect(try await store.begin(key: "young", fingerprint: [1], now: now.addingTimeInterval(30), claim: Self.them) == .proceed)
            let listed = try await store.unsettledKeys(now: now.addingTimeInterval(61), limit: 10)
            #expect(listed.map(\.key) == ["dead"])
            #expect(listed.first?.reason == .claimAbandoned)
            let next = try await store.begin(key: "dead", fingerprint: [1], now: now.addingTimeInterval(62), claim: Self.me)
            #expect(next == listed.first.map { .outcomeUnknown($0) })
        }
    }

    @Test("expire deletes expired rows of its scope in bounded batches, and nothing live")
    func expiry() async throws {
        try await PostgresTestDatabase.withStore(configure: {
            $0.expiryBatchSize = 3
            $0.maximumExpiryBatches = 2
        }) { store, client in
            let now = Self.start
            for index in 0..<10 {
                #expect(try await store.begin(key: "k\(index)", fingerprint: [1], now: now, claim: Self.me) == .proceed)
                let expiresAt = now.addingTimeInterval(index < 8 ? 10 : 1000)
                try await store.complete(key: "k\(index)", response: Self.created, now: now, expiresAt: expiresAt)
            }
            #expect(try await store.begin(key: "running", fingerprint: [1], now: now, claim: Self.me) == .proceed)
            // Another scope's expired key on the same table is not this store's to delete.
            var other = store.configuration
            other.scope = "other-tenant"
            let neighbour = try await PostgresIdempotencyKeyStore.open(client: client, configuration: other, logger: PostgresTestDatabase.logger)
            #expect(try await neighbour.begin(key: "k0", fingerprint: [9], now: now, claim: Self.me) == .proceed)
            try await neighbour.complete(key: "k0", response: Self.created, now: now, expiresAt: now.addingTimeInterval(10))

            let later = now.addingTimeInterval(100)
            #expect(try await store.expire(now: later) == 6)  // two batches of three
            #expect(try await store.expire(now: later) == 2)
            #expect(try await store.expire(now: later) == 0)
            #expect(try await store.begin(key: "k9", fingerprint: [1], now: later, claim: Self.them) == .completed(Self.created))
            #expect(try await store.begin(key: "running", fingerprint: [1], now: later, claim: Self.me) == .inProgress)
            #expect(try await neighbour.expire(now: later) == 1)
        }
    }

    @Test("keys are stored as keyed digests; the client's key only while an operator may need it; SQL in a key is just a key")
    func keysAsDigests() async throws {
        try await PostgresTestDatabase.withStore { store, client in
            let now = Self.start
            let hostile = "x'); DROP TABLE \(store.configuration.table); --"
            #expect(try await store.begin(key: hostile, fingerprint: [1], now: now, claim: Self.me) == .proceed)
            #expect(try await store.begin(key: "plain", fingerprint: [1], now: now, claim: Self.me) == .proceed)
            var rows = try await client.query(
                PostgresQuery(unsafeSQL: "SELECT key_digest, client_key FROM \(store.configuration.table) ORDER BY client_key"),
                logger: PostgresTestDatabase.logger
            ).collect()
            #expect(rows.count == 2)
            for row in rows {
                let (digest, key) = try row.decode((ByteBuffer, String?).self)
                #expect(digest.readableBytes == 32)
                #expect(Array(buffer: digest) != Array(key?.utf8 ?? "".utf8))
            }
            try await store.complete(key: hostile, response: Self.created, now: now, expiresAt: now.addingTimeInterval(60))
            rows = try await client.query(
                PostgresQuery(unsafeSQL: "SELECT client_key FROM \(store.configuration.table) WHERE state = 'completed'"),
                logger: PostgresTestDatabase.logger
            ).collect()
            #expect(try rows.map { try $0.decode(String?.self) } == [nil])
            #expect(try await store.begin(key: hostile, fingerprint: [1], now: now, claim: Self.them) == .completed(Self.created))
        }
    }

    @Test("the migration is idempotent and concurrent; a table of a newer version is refused; without migrate a missing table is refused")
    func migration() async throws {
        try await PostgresTestDatabase.withClient { client in
            var configuration = PostgresIdempotencyKeyStore.Configuration()
            configuration.table = PostgresTestDatabase.freshTable()
            configuration.connectionWait = PostgresTestDatabase.connectionWait
            let opened = try await withThrowingTaskGroup(of: PostgresIdempotencyKeyStore.self) { group in
                for _ in 0..<4 {
                    group.addTask { [configuration] in
                        try await PostgresIdempotencyKeyStore.open(client: client, configuration: configuration, logger: PostgresTestDatabase.logger)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // All four share the table's one secret: a key claimed by one is found by the others.
            #expect(try await opened[0].begin(key: "shared", fingerprint: [1], now: Self.start, claim: Self.me) == .proceed)
            for store in opened.dropFirst() {
                #expect(try await store.begin(key: "shared", fingerprint: [1], now: Self.start, claim: Self.them) == .inProgress)
            }
            try await client.query(
                "UPDATE outbox_idempotency_schema SET version = 99 WHERE key_table = \(configuration.table)", logger: PostgresTestDatabase.logger)
            let tooNew = await #expect(throws: PostgresIdempotencyKeyStoreError.self) {
                _ = try await PostgresIdempotencyKeyStore.open(client: client, configuration: configuration, logger: PostgresTestDatabase.logger)
            }
            #expect(tooNew?.code == .schemaTooNew)
            try await PostgresTestDatabase.drop(configuration.table, on: client)

            var missing = PostgresIdempotencyKeyStore.Configuration()
            missing.connectionWait = PostgresTestDatabase.connectionWait
            missing.table = PostgresTestDatabase.freshTable()
            missing.migrate = false
            let absent = await #expect(throws: PostgresIdempotencyKeyStoreError.self) {
                _ = try await PostgresIdempotencyKeyStore.open(client: client, configuration: missing, logger: PostgresTestDatabase.logger)
            }
            #expect(absent?.code == .schemaMissing)
        }
    }

    @Test("a bad table name or URL is refused before anything reaches the database")
    func badConfiguration() async throws {
        var configuration = PostgresIdempotencyKeyStore.Configuration()
        configuration.table = "keys; DROP TABLE users"
        #expect(throws: PostgresIdempotencyKeyStoreError.self) {
            _ = try PostgresIdempotencyKeyStore.clientConfiguration(url: "postgres://u@127.0.0.1:1/db", configuration: configuration)
        }
        // A regular expression's `$` also matches before a final line break.
        for table in ["keys\n", "keys\r\n", "keys\u{2028}"] {
            configuration.table = table
            #expect(throws: PostgresIdempotencyKeyStoreError.self, "\(table.debugDescription)") {
                _ = try PostgresIdempotencyKeyStore.clientConfiguration(url: "postgres://u@127.0.0.1:1/db", configuration: configuration)
            }
        }
        #expect(throws: PostgresIdempotencyKeyStoreError.self) { _ = try PostgresIdempotencyKeyStore.clientConfiguration(url: "mysql://u@h/db") }
        #expect(throws: PostgresIdempotencyKeyStoreError.self) { _ = try PostgresIdempotencyKeyStore.clientConfiguration(url: "postgres://h/db") }
    }
}
