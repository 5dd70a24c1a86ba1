import Foundation
import IdempotencyKeyPostgres
import Logging
import PostgresNIO
import Testing

/// The PostgreSQL server the tests run against: `OUTBOX_POSTGRES_URL`, as
/// `Scripts/postgres/start.sh` prints it (`.ci/run` starts one).
///
/// Without it the suites are skipped, saying why; with `CI` set they run
/// and fail instead, so CI cannot pass without having tested anything.
enum PostgresTestDatabase {
    static let url: String? = ProcessInfo.processInfo.environment["OUTBOX_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let isCI = !(ProcessInfo.processInfo.environment["CI"] ?? "").isEmpty

    /// The suites' condition: a server to test against, or CI (which must fail without one).
    static let enabled = url != nil || isCI

    /// The URL, or a failure explaining how to get one.
    static func requireURL() throws -> String {
        try #require(url, "OUTBOX_POSTGRES_URL is not set (CI is): .ci/run must start PostgreSQL with Scripts/postgres/start.sh")
    }

    static let logger = Logger(label: "postgres-tests", factory: { _ in SwiftLogNoOpLogHandler() })

    /// How long the tests' stores wait for a connection: a machine running
    /// the whole suite can take seconds to start a server process.
    static let connectionWait: Duration = .seconds(30)

    /// One client for the whole test process (connections are reused, not
    /// made per test), running until the process ends.
    static let shared: PostgresClient? = {
        guard let url else { return nil }
        var configuration = PostgresIdempotencyKeyStore.Configuration()
        configuration.maximumConnections = 10
        guard let client = try? PostgresClient(
            configuration: PostgresIdempotencyKeyStore.clientConfiguration(url: url, configuration: configuration))
        else { return nil }
        Task.detached { await client.run() }
        return client
    }()

    /// Runs `body` with a running client on the test database: the shared
    /// one, or one of its own with another lock timeout.
    static func withClient<T: Sendable>(
        lockTimeout: Duration? = nil, _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        _ = try requireURL()
        do {
            guard let lockTimeout else { return try await body(try #require(shared, "OUTBOX_POSTGRES_URL is not a postgres:// URL")) }
            var configuration = PostgresIdempotencyKeyStore.Configuration()
            configuration.lockTimeout = lockTimeout
            let client = PostgresClient(
                configuration: try PostgresIdempotencyKeyStore.clientConfiguration(url: try requireURL(), configuration: configuration))
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
