import Foundation

/// One server-bound write recorded in the outbox.
///
/// Everything here is stored durably. The idempotency key is fixed at
/// enqueue — the app's own, or derived from the partition and the id — and
/// sent unchanged with every attempt; auth headers are never stored (they
/// come from a token provider at send time).
public struct OutboxEntry: Sendable, Hashable, Identifiable {
    public typealias ID = OutboxEntryID

    // MARK: Identity and request

    /// The local id (a UUID minted on the device).
    public var id: ID
    /// Sent as the `Idempotency-Key` header on every attempt. Never changes:
    /// the key the app passed to `enqueue`, or
    /// ``derivedIdempotencyKey(partition:id:)``.
    public var idempotencyKey: String
    /// The action's discriminator: which handler delivers it.
    public var type: String
    /// The HTTP method, e.g. `POST`.
    public var method: String
    /// The endpoint relative to the server's base URL, e.g. `/albums/local:…/photos`.
    public var endpoint: String
    /// The request body; empty when it is kept in a file (``largePayload``).
    public var payload: [UInt8]
    /// The request body when it is larger than the store's
    /// `largePayloadThreshold`: kept in a file beside the log, read (and
    /// checked) on demand. `nil` for a body held in ``payload``.
    public var largePayload: OutboxLargePayload?
    /// Extra, non-secret headers (never `Authorization`).
    public var headers: [String: String]

    // MARK: Scheduling

    /// The user (partition) the entry belongs to.
    public var partition: String
    /// Entries with the same scope are sent one at a time, in sequence order.
    public var scope: String?
    /// Entries that must succeed before this one is sent.
    public var dependencies: [ID]
    /// Higher first; within a priority, lower sequence first.
    public var priority: Int
    /// Order within the partition: increases with every enqueue.
    public var sequence: UInt64
    /// Enqueueing another entry with this key replaces this one while it is
    /// still pending: the latest value wins.
    public var coalescingKey: String?

    // MARK: State

    public var status: OutboxStatus
    /// Attempts started so far.
    public var attempts: Int
    /// After this many attempts a transient failure quarantines the entry.
    public var maxAttempts: Int
    /// When the next attempt may start (`waitingToRetry`), when the current
    /// attempt's lease expires (`inFlight`), or when the entry was
    /// quarantined (the retention of quarantined entries counts from it).
    public var nextAttemptAt: Date
    /// Why the last attempt failed, or why the entry was set aside
    /// (quarantined, in conflict): its cause, HTTP status and message.
    public var lastFailure: OutboxFailure?
    public var createdAt: Date
    /// When the server acknowledged it (`succeeded`).
    public var syncedAt: Date?
    /// The id the server gave what this entry created.
    public var serverID: String?

    /// The bytes the entry takes in the store (payload, endpoint, headers, metadata).
    public var storedBytes: Int
    /// When the server first answered an attempt (any status), if it has:
    /// the dispatcher's `OutboxDispatcherConfiguration/maximumAge` counts
    /// from here, so an outage (nothing answers) never expires a write.
    public var firstAnswerAt: Date?
    /// When the earliest attempt whose outcome is unknown was made — sent
    /// whole but unanswered, or cut short by a crash (then: when its lease
    /// ended) — if there was one since the entry was last delivered, retried
    /// or resolved by a person. Such a write may have been applied: the
    /// dispatcher's `OutboxDispatcherConfiguration/keyRetention` guard
    /// counts from here, and a 409 to a resend reads as "still in progress".
    public var outcomeUnknownSince: Date?

    /// Builds an entry by hand — for tests of handlers; stores build their own.
    public init(
        id: ID, idempotencyKey: String, type: String, method: String, endpoint: String, payload: [UInt8],
        headers: [String: String], partition: String, scope: String?, dependencies: [ID], priority: Int,
        sequence: UInt64, coalescingKey: String?, status: OutboxStatus, attempts: Int, maxAttempts: Int,
        nextAttemptAt: Date, lastFailure: OutboxFailure?, createdAt: Date, syncedAt: Date?,
        serverID: String?, storedBytes: Int, firstAnswerAt: Date? = nil, outcomeUnknownSince: Date? = nil,
        largePayload: OutboxLargePayload? = nil
    ) {
        self.id = id
        self.idempotencyKey = idempotencyKey
        self.type = type
        self.method = method
        self.endpoint = endpoint
        self.payload = payload
        self.headers = headers
        self.partition = partition
        self.scope = scope
        self.dependencies = dependencies
        self.priority = priority
        self.sequence = sequence
        self.coalescingKey = coalescingKey
        self.status = status
        self.attempts = attempts
        self.maxAttempts = maxAttempts
        self.nextAttemptAt = nextAttemptAt
        self.lastFailure = lastFailure
        self.createdAt = createdAt
        self.syncedAt = syncedAt
        self.serverID = serverID
        self.storedBytes = storedBytes
        self.firstAnswerAt = firstAnswerAt
        self.outcomeUnknownSince = outcomeUnknownSince
        self.largePayload = largePayload
    }

    /// The request body, wherever it is kept: ``payload``, or the file of
    /// ``largePayload`` (read off the cooperative pool, and checked).
    public func loadPayload() async throws(OutboxError) -> [UInt8] {
        guard let largePayload else { return payload }
        return try await largePayload.bytes()
    }
}
