import Foundation
import OutboxModel

/// What a partition keeps in memory for each entry: everything scheduling
/// needs, nothing a send needs (endpoint, headers and payload are read from
/// the store on demand). The scheduler's working view: the ``EntryTable``
/// stores it packed in 72 bytes, dependencies aside.
package struct EntryMetadata: Sendable, Hashable {
    package var id: OutboxEntryID
    package var sequence: UInt64
    var status: OutboxStatus
    var priority: Int16
    var attempts: UInt16
    var maxAttempts: UInt16
    /// Interned scope, type and coalescing key (0: none).
    var scope: UInt32
    var type: UInt32
    var coalescing: UInt32
    /// Milliseconds since 1970: when the next attempt may start, or (in
    /// flight) when the lease expires. New entries are due ``immediately``,
    /// whatever the clock says.
    var when: Int64

    static let immediately: Int64 = 0
    /// No store numbers an entry this far (one enqueue a nanosecond for 292
    /// years): a larger sequence number read back is damage, refused by
    /// every decoder, so `sequence + 1` never overflows.
    package static let sequenceLimit = UInt64(Int64.max)
    /// Times a record may hold (ms since 1970): a date ``/OutboxModel/OutboxLimits/dates``
    /// accepts, plus at most ``/OutboxModel/OutboxLimits/maximumDuration`` (a lease's end,
    /// a retry's time). A time read back outside them is damage: inside,
    /// it converts to `Date` and back exactly, never trapping.
    static let dateLimits: ClosedRange<Int64> = -62_135_596_800_000...(253_402_300_799_999 + 100 * 365 * 86_400_000)
    /// When the app created the entry (ms since 1970): the summary's oldest
    /// unsent entry.
    var createdAt: Int64
    var storedBytes: UInt32
    var dependencies: [OutboxEntryID]? = nil
    /// Bumped on every change, so stale heap items can be recognised.
    var version: UInt32 = 0

    package init(
        id: OutboxEntryID, sequence: UInt64, status: OutboxStatus, priority: Int16, attempts: UInt16,
        maxAttempts: UInt16, scope: UInt32, type: UInt32, coalescing: UInt32, when: Int64, createdAt: Int64,
        storedBytes: UInt32, dependencies: [OutboxEntryID]? = nil, version: UInt32 = 0
    ) {
        self.id = id
        self.sequence = sequence
        self.status = status
        self.priority = priority
        self.attempts = attempts
        self.maxAttempts = maxAttempts
        self.scope = scope
        self.type = type
        self.coalescing = coalescing
        self.when = when
        self.createdAt = createdAt
        self.storedBytes = storedBytes
        self.dependencies = dependencies
        self.version = version
    }
}

/// What a store keeps about an entry's failures: the last one, and when
/// the server first answered and when an attempt of unknown outcome was
/// first made. Kept only for entries that have failed (FailureCoding).
package struct FailureInfo: Sendable, Hashable {
    /// The last attempt's failure, or why the entry was set aside.
    package var last: OutboxFailure? = nil
    /// When the server first answered an attempt (ms since 1970): the
    /// dispatcher's maximum age counts from here.
    var firstAnsweredAt: Int64? = nil
    /// When the earliest attempt whose outcome is unknown (sent, answer lost;
    /// or cut short by a crash) was made, in ms since 1970 — for a crash, the
    /// end of its lease. Kept until the entry is delivered or a person
    /// decides (retry, conflict, quarantine): the dispatcher's key-retention
    /// guard counts from here.
    var outcomeUnknownSince: Int64? = nil

    package init(last: OutboxFailure? = nil, firstAnsweredAt: Int64? = nil, outcomeUnknownSince: Int64? = nil) {
        self.last = last
        self.firstAnsweredAt = firstAnsweredAt
        self.outcomeUnknownSince = outcomeUnknownSince
    }

    /// Quarantined because of `dependency`.
    init(dependency: OutboxDependencyFailure) {
        self.init(last: OutboxFailure(.dependency(dependency)))
    }

    /// Whether nothing is kept (such a record is not written).
    var isEmpty: Bool { last == nil && firstAnsweredAt == nil && outcomeUnknownSince == nil }

    /// The dependency failure that quarantined the entry, if one did: what
    /// reviving dependents reads, never the message.
    package var dependency: OutboxDependencyFailure? {
        if case .dependency(let dependency) = last?.cause { dependency } else { nil }
    }
}

/// A delivered entry's mark: it satisfies dependencies and maps the
/// entry's local reference to the server's id.
package struct Completion: Sendable, Hashable {
    var serverID: String?
    var syncedAt: Int64
    /// The entry's idempotency key if the app supplied it: a later enqueue
    /// with that key is a duplicate while this completion is kept.
    package var idempotencyKey: String? = nil

    package init(serverID: String?, syncedAt: Int64, idempotencyKey: String? = nil) {
        self.serverID = serverID
        self.syncedAt = syncedAt
        self.idempotencyKey = idempotencyKey
    }
}

extension Date {
    package var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }
    init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}

extension Duration {
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}

extension OutboxDependencyFailure {
    /// Whether a store could have recorded this cause for `entry`: only a
    /// quarantined entry has one, and it names one of its dependencies.
    /// Anything else read back is damage.
    func fits(_ entry: EntryMetadata) -> Bool {
        entry.status == .quarantined && (entry.dependencies?.contains(parent) ?? false)
    }
}
