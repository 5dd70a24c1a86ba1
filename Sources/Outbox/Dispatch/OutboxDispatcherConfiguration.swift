import Foundation
import Logging

/// How an ``OutboxDispatcher`` paces, times and retries deliveries.
public struct OutboxDispatcherConfiguration: Sendable {
    /// At most this many deliveries at once (each from a different scope:
    /// a scope always sends one at a time). Default 4.
    public var maximumConcurrentDeliveries = 4
    /// Exponential backoff with full jitter; default base 1 s, cap 5 min.
    public var backoff = OutboxBackoff()
    /// An entry older than this is quarantined instead of retried (the
    /// seeds' "older than N days → give up", but never silently). Default 7 days.
    public var maximumAge: Duration? = .seconds(7 * 24 * 3600)
    /// A delivery running longer is cancelled and counts as a transient
    /// failure. Default 60 s.
    public var deliveryTimeout: Duration = .seconds(60)
    /// The attempt's lease outlives the timeout by this much.
    public var leaseGrace: Duration = .seconds(30)
    /// How often, at most, a drain also prunes succeeded entries past their
    /// audit window and stale id mappings. Default one hour.
    public var pruneInterval: Duration = .seconds(3600)
    /// Seed for the backoff jitter (tests); `nil` uses system randomness.
    public var randomSeed: UInt64?
    public var logger = Logger(label: "outbox.dispatcher")

    public init() {}
}

/// What one ``OutboxDispatcher/flush()`` did.
public struct OutboxFlushReport: Sendable, Hashable, Codable {
    public var delivered = 0
    public var retried = 0
    public var quarantined = 0
    public var conflicts = 0
    public var discarded = 0
    /// Entries left alone because no handler handles their type.
    public var unhandled = 0
    /// Store or handler errors that ended an attempt early.
    public var errors: [String] = []

    public init() {}

    mutating func add(_ other: OutboxFlushReport) {
        delivered += other.delivered
        retried += other.retried
        quarantined += other.quarantined
        conflicts += other.conflicts
        discarded += other.discarded
        unhandled += other.unhandled
        errors += other.errors
    }
}
