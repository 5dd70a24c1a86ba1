import Foundation

/// Counts and bytes of a partition's entries by status: what a "pending
/// writes" badge shows.
public struct OutboxSummary: Sendable, Hashable, Codable {
    public var counts: [OutboxStatus: Int]
    public var bytes: [OutboxStatus: Int]

    public init(counts: [OutboxStatus: Int] = [:], bytes: [OutboxStatus: Int] = [:]) {
        self.counts = counts
        self.bytes = bytes
    }

    /// Entries not yet delivered and not quarantined: pending, in flight or failed.
    public var unsent: Int { count(.pending) + count(.inFlight) + count(.failed) }
    /// Entries that need a person: dead or in conflict.
    public var needsAttention: Int { count(.dead) + count(.conflict) }
    /// All entries held.
    public var total: Int { counts.values.reduce(0, +) }
    public var totalBytes: Int { bytes.values.reduce(0, +) }

    public func count(_ status: OutboxStatus) -> Int { counts[status] ?? 0 }
}

/// Which entries ``OutboxStore/entries(matching:)`` returns.
public struct OutboxFilter: Sendable, Hashable {
    /// Only these statuses (`nil`: all).
    public var statuses: Set<OutboxStatus>?
    /// Only this type.
    public var type: String?
    /// Only this scope.
    public var scope: String?
    /// At most this many, in sequence order.
    public var limit: Int?

    public init(statuses: Set<OutboxStatus>? = nil, type: String? = nil, scope: String? = nil, limit: Int? = nil) {
        self.statuses = statuses
        self.type = type
        self.scope = scope
        self.limit = limit
    }

    public static let all = OutboxFilter()
}

/// What a quarantine, discard or retry did besides the entry itself.
public struct OutboxCascade: Sendable, Hashable {
    /// Dependents quarantined (reason `dependencyFailed`) or revived with it.
    public var dependents: [OutboxEntry.ID]

    public init(dependents: [OutboxEntry.ID] = []) { self.dependents = dependents }
}
