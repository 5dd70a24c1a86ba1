import Foundation
import IdempotencyKeyMiddleware
import Logging
import PostgresNIO

extension PostgresIdempotencyKeyStore {
    /// Records `response` for `key` **inside the caller's transaction**, on
    /// `connection`: the handler's own write and the key's response then
    /// commit together, or neither does. A crash before the commit leaves
    /// the claim in progress and nothing applied; after it, a retry is
    /// answered with `response`.
    ///
    /// Call it last in the transaction, with the response the handler is
    /// about to return: the same status, body and replayed headers
    /// (`content-type`, `location`, `etag`, `last-modified`, lower-case
    /// names), so a replay is byte for byte the first answer. The
    /// middleware's own completion after the handler returns then finds the
    /// key completed and leaves it alone.
    ///
    /// - Parameters:
    ///   - expiresAt: when the key may be forgotten: now plus the
    ///     middleware's ``IdempotencyMiddleware/Configuration/retention``.
    ///   - owner: the middleware's ``IdempotencyMiddleware/Configuration/serverInstance``.
    /// A claim another node marked abandoned meanwhile (it found the claim
    /// stale: its clock is ahead, or the handler outlived `staleAfter`) is
    /// still this owner's to complete: the write and its answer commit
    /// together, and repeats get the answer instead of outcome-unknown.
    ///
    /// - Throws: ``PostgresIdempotencyKeyStoreError/Code/claimLost`` if this
    ///   owner does not hold the key's claim (an operator resolved it, or it
    ///   expired and another node claimed the key, or it was never claimed):
    ///   let it roll the transaction back, so the write is not applied
    ///   without its key.
    public func complete(
        key: String, response: StoredResponse, expiresAt: Date, owner: String = IdempotencyServerInstance.current,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        let updated = try await connection.query(
            completion(key: key, response: response, expiresAt: expiresAt, owner: owner, when: Self.heldClaim), logger: logger
        ).collect()
        guard !updated.isEmpty else {
            throw PostgresIdempotencyKeyStoreError(.claimLost, "key \(key) is not claimed by \(owner): its write must not commit")
        }
    }
}

extension PostgresIdempotencyKeyStore {
    /// Runs `body` in a transaction on a connection of the store's client,
    /// leased within ``Configuration/connectionWait`` (else it throws
    /// ``PostgresIdempotencyKeyStoreError/Code/unavailable``): for a handler
    /// that writes and records its key's response together
    /// (``complete(key:response:expiresAt:owner:on:logger:)``). An error
    /// `body` throws rolls the transaction back and comes out as itself.
    public func withTransaction<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws
        -> Result
    {
        try await PostgresLease.withTransaction(client, timeout: configuration.connectionWait, logger: logger, body)
    }
}
