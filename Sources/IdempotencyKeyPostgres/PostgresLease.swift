import Foundation
import IdempotencyKeyMiddleware
import Logging
import OutboxLocking
import PostgresNIO

/// A connection from the client's pool within a time limit.
///
/// PostgresNIO's pool keeps a request waiting for as long as it takes to
/// connect: with the database unreachable, a store call would never return
/// and the request would hang instead of being refused. The wait for a
/// connection is bounded here; once leased, a statement is bounded by the
/// server's `statement_timeout` and `lock_timeout` instead, and is never
/// abandoned half-way (a claim sent to the server must not be given up on
/// while it may still commit).
enum PostgresLease {
    /// Where the race between the lease and the time limit stands.
    private enum Stage { case waiting, running, expired }

    static func withConnection<Result: Sendable>(
        _ client: PostgresClient, timeout: Duration, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let stage = Locked(Stage.waiting)
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    let late = stage.withLock { stage in
                        if stage == .waiting { stage = .running }
                        return stage == .expired
                    }
                    if late { throw unavailable(timeout) }
                    return try await body(connection)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                let expired = stage.withLock { stage in
                    if stage == .waiting { stage = .expired }
                    return stage == .expired
                }
                if expired { throw unavailable(timeout) }
                return nil  // the statement runs: its own timeouts bound it
            }
            while let next = try await group.next() {
                if let result = next {
                    group.cancelAll()
                    return result
                }
            }
            throw unavailable(timeout)
        }
    }

    static func unavailable(_ timeout: Duration) -> PostgresIdempotencyKeyStoreError {
        PostgresIdempotencyKeyStoreError(.unavailable, "no database connection within \(timeout)")
    }

    /// `withConnection` and a transaction on it; an error `body` throws
    /// comes out as itself (PostgresNIO wraps it in a
    /// `PostgresTransactionError`) once the transaction was rolled back.
    static func withTransaction<Result: Sendable>(
        _ client: PostgresClient, timeout: Duration, logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection(client, timeout: timeout) { connection in
            do {
                return try await connection.withTransaction(logger: logger) { try await body($0) }
            } catch let error as PostgresTransactionError {
                if let thrown = error.closureError, error.rollbackError == nil { throw thrown }
                throw error
            }
        }
    }
}
