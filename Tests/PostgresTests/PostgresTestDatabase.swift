import Foundation
import IdempotencyKeyPostgres
import Logging
import PostgresNIO
import Testing

/// The PostgreSQL server the tests run against: `OUTBOX_POSTGRES_URL`, or
/// one the test process starts itself (``PostgresTestServer``).
///
/// Without either the suites are skipped, saying why (`.needsPostgres`);
/// with `CI` set they run and fail instead, so CI cannot pass without
/// having tested anything.
enum PostgresTestDatabase {
    static let isCI = !(ProcessInfo.processInfo.environment["CI"] ?? "").isEmpty

    /// The URL, or a failure explaining why there is none.
    static func requireURL() async throws -> String {
        switch await PostgresTestServer.outcome.value {
        case .url(let url):
            return url
        case .notInstalled:
            throw DatabaseFailure(
                description: "no PostgreSQL server (CI is set): .ci/run must set OUTBOX_POSTGRES_URL, or install Debian's postgresql")
        case .failed(let reason):
            throw DatabaseFailure(description: "no PostgreSQL server: \(reason)")
        }
    }

    static let logger = Logger(label: "postgres-tests", factory: { _ in SwiftLogNoOpLogHandler() })

    /// How long the tests' stores wait for a connection: a machine running
    /// the whole suite can take seconds to start a server process, and the
    /// client's run loop waits for the same two threads as every suite
    /// (30 s was not always enough on a loaded two-core machine).
    static let connectionWait: Duration = .seconds(120)

    /// One client for the whole test process (connections are reused, not
    /// made per test), running until the process ends.
    static let shared = Task<PostgresClient, any Error> {
        var configuration = PostgresIdempotencyKeyStore.Configuration()
        configuration.maximumConnections = 10
        let client = PostgresClient(
            configuration: try PostgresIdempotencyKeyStore.clientConfiguration(url: try await requireURL(), configuration: configuration))
        Task.detached { await client.run() }
        return client
    }

    /// Runs `body` with a running client on the test database: the shared
    /// one, or one of its own with another lock timeout.
    static func withClient<T: Sendable>(
        lockTimeout: Duration? = nil, _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let url = try await requireURL()
        do {
            guard let lockTimeout else { return try await body(try await shared.value) }
            var configuration = PostgresIdempotencyKeyStore.Configuration()
            configuration.lockTimeout = lockTimeout
            let client = PostgresClient(
                configuration: try PostgresIdempotencyKeyStore.clientConfiguration(url: url, configuration: configuration))
            let running = Task { await client.run() }
            defer { running.cancel() }
            return try await body(client)
        } catch let error as PSQLError {
            // Its description hides the server's message: show it.
            throw DatabaseFailure(description: String(reflecting: error))
        }
    }

    struct DatabaseFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// A table name no other test uses.
    static func freshTable() -> String {
        "test_keys_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
    }

    /// Drops a test's table (and its schema row).
    static func drop(_ table: String, on client: PostgresClient) async throws {
        _ = try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \(table)"), logger: logger).collect()
        _ = try await client.query("DELETE FROM outbox_idempotency_schema WHERE key_table = \(table)", logger: logger).collect()
    }

    /// Opens a store on a fresh table (`configure` adjusts it), runs `body`, drops the table.
    static func withStore<T: Sendable>(
        lockTimeout: Duration? = nil,
        configure: @Sendable (inout PostgresIdempotencyKeyStore.Configuration) -> Void = { _ in },
        _ body: @Sendable (PostgresIdempotencyKeyStore, PostgresClient) async throws -> T
    ) async throws -> T {
        try await withClient(lockTimeout: lockTimeout) { client in
            var configuration = PostgresIdempotencyKeyStore.Configuration()
            configuration.table = freshTable()
            configuration.connectionWait = connectionWait
            configure(&configuration)
            let store = try await PostgresIdempotencyKeyStore.open(client: client, configuration: configuration, logger: logger)
            do {
                let result = try await body(store, client)
                try await drop(configuration.table, on: client)
                return result
            } catch {
                try? await drop(configuration.table, on: client)
                throw error
            }
        }
    }
}
