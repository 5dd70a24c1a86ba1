import Foundation

/// Why the PostgreSQL key store refused to open or to do what it was asked.
///
/// Database errors (a connection refused, a statement timeout) are thrown as
/// they come from PostgresNIO; the middleware answers any error from
/// `begin` with 503 before the handler runs.
public struct PostgresIdempotencyKeyStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The table name (or another setting) is not acceptable.
        case invalidConfiguration = "invalid-configuration"
        /// A `postgres://` URL that cannot be read.
        case invalidURL = "invalid-url"
        /// The table was made by a newer version of this store, which this
        /// one does not know how to read.
        case schemaTooNew = "schema-too-new"
        /// The table does not exist and ``PostgresIdempotencyKeyStore/Configuration/migrate``
        /// is off.
        case schemaMissing = "schema-missing"
        /// A row the store cannot read (an unknown state, a missing column).
        case damagedRow = "damaged-row"
        /// ``PostgresIdempotencyKeyStore/complete(key:response:expiresAt:owner:on:logger:)``:
        /// the key is not claimed by this owner (its claim was released or
        /// resolved, taken over after it expired, or never made). Throwing rolls the
        /// application's transaction back, so its write is not applied
        /// without its key.
        case claimLost = "claim-lost"
        /// No database connection could be had within
        /// ``PostgresIdempotencyKeyStore/Configuration/connectionWait`` (the
        /// database is down or unreachable, or every connection is busy):
        /// nothing was sent. `begin` failing so is answered 503 before the
        /// handler runs.
        case unavailable
        /// A key's row kept changing under `begin` (it retried a bounded
        /// number of times).
        case contention
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
