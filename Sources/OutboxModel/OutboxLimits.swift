import Foundation

/// The bounds an `OutboxStore` enforces on what its caller gives it.
///
/// Anything outside them is refused with an ``OutboxError`` —
/// ``OutboxError/Code/invalidArgument``, or ``OutboxError/Code/tooLarge`` for
/// an entry over the log's record limit — before anything changes: the
/// store stays usable. The entry's whole record (request, payload, headers,
/// scheduling fields) must also fit the log's `maximumRecordSize` (16 MiB
/// by default, `OutboxStoreConfiguration.log`).
public enum OutboxLimits {
    /// UTF-8 bytes of `type`, `scope` and `coalescingKey`; each, when
    /// given, is at least one byte (`nil` means "none", not `""`).
    public static let maximumNameBytes = 1024
    /// UTF-8 bytes of the endpoint (a path starting with `/`, without
    /// spaces or control characters).
    public static let maximumEndpointBytes = 8192
    /// Headers per entry.
    public static let maximumHeaderCount = 256
    /// UTF-8 bytes of all header names and values together: servers commonly
    /// refuse a larger header section (HTTP 431).
    public static let maximumHeaderBytes = 64 << 10
    /// Dependencies per entry.
    public static let maximumDependencies = 1024
    /// Accepted priorities.
    public static let priorities = Int(Int16.min)...Int(Int16.max)
    /// Accepted `maxAttempts` (and `defaultMaximumAttempts`).
    public static let attempts = 1...Int(UInt16.max)
    /// An app-supplied idempotency key is 1 to 255 visible ASCII characters
    /// (what `IdempotencyKeyMiddleware` and most servers accept).
    public static let idempotencyKeyLength = 1...255
    /// The largest payload a store keeps in a file
    /// (`OutboxStoreConfiguration.maximumPayloadBytes` cannot be set above it):
    /// a little under 4 GiB, what a record's 32-bit `storedBytes` can still count.
    public static let maximumPayloadFileBytes = Int(UInt32.max) - (1 << 20)
    /// UTF-8 bytes of a server id recorded with a success.
    public static let maximumServerIDBytes = 64 << 10
    /// The longest duration accepted anywhere (leases, retentions, timeouts,
    /// backoff): 100 years. Durations are never negative.
    public static let maximumDuration: Duration = .seconds(100 * 365 * 24 * 3600)
    /// Dates (`now`, `retryAt`, `createdAt`) lie between the years 1 and
    /// 9999 and are finite (never NaN).
    public static let dates =
        Date(timeIntervalSince1970: -62_135_596_800)...Date(timeIntervalSince1970: 253_402_300_799)
}
