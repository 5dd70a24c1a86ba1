import ArgumentParser
import Foundation
import IdempotencyKeyPostgres
import Logging
import PostgresNIO

/// `--postgres URL [--postgres-scope NAME]`, shared by `serve`, `demo` and `keys`.
struct PostgresOptions: ParsableArguments {
    @Option(
        name: .customLong("postgres"),
        help: ArgumentHelp(
            "Keep idempotency keys (and, for serve, the reference API's writes) in this PostgreSQL database.",
            valueName: "postgres://user@host:port/database"))
    var url: String?

    @Option(help: "The scope (tenant) of the keys and writes in the database: servers sharing one see each other's keys.")
    var postgresScope = "default"

    func validate() throws {
        guard let url else { return }
        _ = try Self.clientConfiguration(url: url)
        guard !postgresScope.isEmpty, postgresScope.utf8.count <= 200 else { throw ValidationError("--postgres-scope must be 1 to 200 bytes") }
    }

    static func clientConfiguration(url: String, store: PostgresIdempotencyKeyStore.Configuration = .init()) throws
        -> PostgresClient.Configuration
    {
        do {
            return try PostgresIdempotencyKeyStore.clientConfiguration(url: url, configuration: store)
        } catch {
            throw ValidationError("--postgres: \(error)")
        }
    }
}

/// A running PostgresNIO client and the key store on it.
struct PostgresSession {
    let client: PostgresClient
    let keys: PostgresIdempotencyKeyStore
    private let running: Task<Void, Never>

    /// Connects (the client runs until ``close()``) and opens the key store,
    /// creating its table if needed.
    static func open(url: String, scope: String, staleAfter: Duration = .seconds(60)) async throws -> PostgresSession {
        var configuration = PostgresIdempotencyKeyStore.Configuration()
        configuration.scope = scope
        configuration.staleAfter = staleAfter
        let client = PostgresClient(configuration: try PostgresOptions.clientConfiguration(url: url, store: configuration))
        let running = Task { await client.run() }
        do {
            let keys = try await PostgresIdempotencyKeyStore.open(client: client, configuration: configuration, logger: quietLogger)
            return PostgresSession(client: client, keys: keys, running: running)
        } catch {
            running.cancel()
            // PSQLError's description hides the server's message; an operator needs it.
            throw CommandFailure(
                "cannot open the idempotency keys in PostgreSQL: \(String(reflecting: error))", exitCode: CommandFailure.cannotOpen)
        }
    }

    func close() async {
        running.cancel()
        await running.value
    }

    static let quietLogger = Logger(label: "outbox.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
}
