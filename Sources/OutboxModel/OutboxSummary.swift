import Foundation

/// Counts and bytes of a partition's entries by status: what a "pending
/// writes" badge shows.
public struct OutboxSummary: Sendable, Hashable, Codable {
    public var counts: [OutboxStatus: Int]
    public var bytes: [OutboxStatus: Int]

    /// When the oldest entry not yet delivered (pending, waiting to retry or in
    /// flight) was created; `nil` when there is none. For "waiting since…".
    public var oldestUnsentAt: Date?
    /// The earliest time an entry waiting for its retry may be sent again
    /// (in the past: due now); `nil` when none waits for a time.
    public var nextAttemptAt: Date?

    public init(
        counts: [OutboxStatus: Int] = [:], bytes: [OutboxStatus: Int] = [:], oldestUnsentAt: Date? = nil,
        nextAttemptAt: Date? = nil
    ) {
        self.counts = counts
        self.bytes = bytes
        self.oldestUnsentAt = oldestUnsentAt
        self.nextAttemptAt = nextAttemptAt
    }

    /// How long the oldest unsent entry has waited at `now`; `nil` when
    /// nothing is unsent.
    public func oldestUnsentAge(at now: Date = Date()) -> TimeInterval? {
        oldestUnsentAt.map { max(0, now.timeIntervalSince($0)) }
    }

    /// Entries not yet delivered and not quarantined: pending, in flight or failed.
    public var unsent: Int { count(.pending) + count(.inFlight) + count(.waitingToRetry) }
    /// Entries that need a person: quarantined or in conflict.
    public var needsAttention: Int { count(.quarantined) + count(.conflict) }
    /// All entries held.
    public var total: Int { counts.values.reduce(0, +) }
    public var totalBytes: Int { bytes.values.reduce(0, +) }

    public func count(_ status: OutboxStatus) -> Int { counts[status] ?? 0 }
}

/// Which entries `OutboxStore/entries(matching:)` returns.
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
    /// Dependents quarantined (cause ``OutboxFailure/Cause/dependency(_:)``)
    /// or revived with it.
    public var dependents: [OutboxEntry.ID]
    /// Why each quarantined dependent was quarantined, as its entry records
    /// it: what became of its own parent (a grandchild names the child, not
    /// the root). Empty for a retry.
    public var causes: [OutboxEntry.ID: OutboxDependencyFailure]

    public init(dependents: [OutboxEntry.ID] = [], causes: [OutboxEntry.ID: OutboxDependencyFailure] = [:]) {
        self.dependents = dependents
        self.causes = causes
    }
}
