import Foundation

extension PostgresIdempotencyKeyStore {
    /// Where the store keeps keys and how long it waits.
    public struct Configuration: Sendable {
        /// The keys' table (a plain lower-case SQL identifier, at most 48
        /// characters: the store names its indexes after it). Default
        /// `outbox_idempotency_keys`.
        public var table = "outbox_idempotency_keys"
        /// The tenant (or API) whose keys this store sees: a key is unique
        /// per (scope, key), so services sharing one table do not collide.
        public var scope = "default"
        /// Whether ``PostgresIdempotencyKeyStore/open(client:configuration:logger:)``
        /// creates or upgrades the table. Off, the table must exist at the
        /// version this store reads.
        public var migrate = true
        /// How long a statement waits for a row another transaction holds
        /// (an application transaction recording a response, say) before
        /// `begin` answers "in progress" (409 with `Retry-After`) instead.
        /// Applied through ``clientConfiguration(url:configuration:)``.
        public var lockTimeout: Duration = .seconds(2)
        /// How long a store call waits for a connection from the client's
        /// pool (connecting included) before it fails with
        /// ``PostgresIdempotencyKeyStoreError/Code/unavailable``: with the
        /// database down, requests are refused (503) instead of hanging.
        public var connectionWait: Duration = .seconds(10)
        /// The longest any statement of the store's connections may run.
        public var statementTimeout: Duration = .seconds(10)
        /// Connections in the client's pool
        /// (``clientConfiguration(url:configuration:)``).
        public var maximumConnections = 20
        /// Rows deleted per statement by ``PostgresIdempotencyKeyStore/expire(now:)``,
        /// and the most statements one call runs: a sweep never holds many
        /// locks or runs long inside a request; what is left goes next time.
        public var expiryBatchSize = 1_000
        public var maximumExpiryBatches = 10
        /// An operator's listing (``PostgresIdempotencyKeyStore/unsettledKeys(now:limit:)``)
        /// counts an in-progress claim this old as abandoned (its server
        /// stopped mid-request), as `begin` does with the middleware's
        /// `staleAfter`; a sweep (``PostgresIdempotencyKeyStore/expire(now:)``)
        /// deletes an expired in-progress claim only once it is this old.
        /// Keep the two equal.
        public var staleAfter: Duration = .seconds(60)

        public init() {}

        /// Startup parameters for the store's connections.
        var sessionParameters: [(String, String)] {
            [
                ("lock_timeout", "\(Self.milliseconds(lockTimeout))ms"),
                ("statement_timeout", "\(Self.milliseconds(statementTimeout))ms"),
                ("application_name", "outbox-idempotency"),
            ]
        }

        static func milliseconds(_ duration: Duration) -> Int64 {
            let (seconds, attoseconds) = duration.components
            return max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        }

        /// `[a-z_][a-z0-9_]{0,47}`, byte by byte: the name is spliced into SQL.
        /// (Not a regular expression: its `$` also matches before a final
        /// line break, and `keys\n` would pass.)
        static func isPlainIdentifier(_ name: String) -> Bool {
            let lower = UInt8(ascii: "a")...UInt8(ascii: "z")
            let digit = UInt8(ascii: "0")...UInt8(ascii: "9")
            let underscore = UInt8(ascii: "_")
            let bytes = Array(name.utf8)
            guard let first = bytes.first, bytes.count <= 48, first == underscore || lower.contains(first) else { return false }
            return bytes.allSatisfy { $0 == underscore || lower.contains($0) || digit.contains($0) }
        }

        func validate() throws {
            guard Self.isPlainIdentifier(table) else {
                throw PostgresIdempotencyKeyStoreError(
                    .invalidConfiguration, "table must be a lower-case SQL identifier of at most 48 characters, not \(String(reflecting: table))")
            }
            guard expiryBatchSize > 0, maximumExpiryBatches > 0 else {
                throw PostgresIdempotencyKeyStoreError(.invalidConfiguration, "expiryBatchSize and maximumExpiryBatches must be positive")
            }
            guard lockTimeout > .zero, statementTimeout > .zero, connectionWait > .zero, staleAfter > .zero, maximumConnections > 0 else {
                throw PostgresIdempotencyKeyStoreError(
                    .invalidConfiguration, "lockTimeout, statementTimeout, connectionWait, staleAfter and maximumConnections must be positive")
            }
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
