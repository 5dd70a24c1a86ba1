import Foundation
import OutboxModel

/// The durable queue of one user's (partition's) outbox entries: the only
/// interface the dispatcher talks to.
///
/// Two implementations pass the same conformance suite:
/// ``LogOutboxStore`` (on `OutboxLog`, for apps) and ``InMemoryOutboxStore``
/// (for unit tests of app code). Every method validates first and throws
/// without changing anything; `now` is passed in so tests control time.
public protocol OutboxStore: AnyObject, Sendable {
    /// The user (partition) whose entries this store holds.
    var partition: String { get }

    /// Records a new entry: the commit point of a user's action. Idempotent:
    /// the same id twice is one entry (``/OutboxModel/OutboxEnqueueResult/duplicate(_:status:)``).
    /// With a coalescing key, replaces the newest entry with the same key if it
    /// has stayed pending since its enqueue (Docs/OUTBOX.md, Coalescing).
    ///
    /// - Complexity: in the stores this package ships, O(log *n*) in live
    ///   entries (the send order is a heap) plus O(*d*) in the request's
    ///   dependencies and O(*b*) in its bytes (encoded, and sealed with a
    ///   key, before the store's lock), plus the wait for
    ///   `enqueueDurability`.
    func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult

    /// Records several entries all or nothing, in one write (one log
    /// batch for ``LogOutboxStore``): every request is admitted (or found a
    /// duplicate) or the first refusal is thrown and nothing is written. A
    /// request may depend on an earlier one of the same call. The default
    /// accepts at most one request (a store without atomic batches).
    func enqueue(_ requests: [OutboxEnqueueRequest]) async throws(OutboxError) -> [OutboxEnqueueResult]

    /// The entries that may be sent at `now`, best first (priority, then
    /// sequence): sendable status, time reached, dependencies succeeded, and
    /// first unfinished entry of their scope.
    func dueEntries(at now: Date, limit: Int) async throws(OutboxError) -> [OutboxEntry]

    /// Claims due entries for delivery: up to `limit` of them whose type
    /// `accepting` returns `true`, chosen as ``dueEntries(at:limit:)`` would,
    /// each put in flight with its attempt counted and a lease until
    /// `now + lease` — as if ``beginAttempt(_:at:lease:)`` ran on each, but
    /// atomically and with one write for all of them. Due entries of other
    /// types are left untouched and listed in ``OutboxClaim/unaccepted``.
    ///
    /// - Complexity: in the stores this package ships, O(*k* log *n*) for
    ///   *k* entries looked at among *n* live ones, plus one read of the
    ///   claimed entries' bodies together.
    func claimDue(
        at now: Date, limit: Int, lease: Duration, accepting: (String) -> Bool
    ) async throws(OutboxError) -> OutboxClaim

    /// When the next entry waiting for its retry time becomes due, if any.
    func nextDueDate() async throws(OutboxError) -> Date?

    /// Starts an attempt: the entry goes in flight, the attempt is counted,
    /// and a lease runs until `now + lease`.
    func beginAttempt(_ id: OutboxEntry.ID, at now: Date, lease: Duration) async throws(OutboxError) -> OutboxEntry

    /// Delivered. Stores the server's id as the mapping of the entry's
    /// `local:` reference, in the same write that records the success.
    /// Accepted for an entry in flight, and for one in `conflict` (the app
    /// found that the server applied it: `OutboxDispatcher/markDelivered(_:serverID:)`).
    ///
    /// - Complexity: in the stores this package ships, O(log *n*) in live
    ///   entries, plus O(*d* log *n*) for the *d* entries that depend on it.
    func recordSuccess(_ id: OutboxEntry.ID, serverID: String?, at now: Date) async throws(OutboxError)

    /// Delivered, for several entries at once: as
    /// ``recordSuccess(_:serverID:at:)`` for each, but in one write with one
    /// wait for all of them (what a drain does with the successes of many
    /// attempts). An entry whose success is refused (not in flight, an
    /// invalid server id) is returned with its error, and the others are
    /// recorded; a storage failure throws, and then none is. The default
    /// records them one by one.
    func recordSuccesses(_ successes: [OutboxSuccess], at now: Date) async throws(OutboxError)
        -> [OutboxEntry.ID: OutboxError]

    /// A failed attempt: the entry waits to be retried at `retryAt`, or is
    /// quarantined (cause ``/OutboxModel/OutboxFailure/Cause/attemptsUsedUp``, then its
    /// dependents too) if the attempt counts and was its last.
    ///
    /// - `countsAsAttempt: false` gives the attempt back (a request that
    ///   never reached the server, an answer lost after the request was sent,
    ///   an in-progress poll): it neither uses up `maxAttempts` nor
    ///   quarantines.
    /// - `serverAnsweredAt` is when the server answered this attempt, if it
    ///   did; the first such time is kept as ``/OutboxModel/OutboxEntry/firstAnswerAt``.
    /// - `outcomeUnknownAt` is when an attempt was made that was sent whole
    ///   but got no answer (it may have been applied); the earliest such time
    ///   is kept as ``/OutboxModel/OutboxEntry/outcomeUnknownSince`` until the entry is
    ///   delivered, retried or resolved.
    func recordFailure(
        _ id: OutboxEntry.ID, _ failure: OutboxFailure, retryAt: Date, countsAsAttempt: Bool, serverAnsweredAt: Date?,
        outcomeUnknownAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade)

    /// Puts entries whose lease expired at or before `now` back in the queue
    /// (`pending`, due at once, the attempt counted), as opening the store
    /// does for leases a crash left: an attempt that never recorded an
    /// outcome does not hold its entry while the store stays open. Returns
    /// their ids. The default reclaims nothing.
    func reclaimExpiredLeases(at now: Date) async throws(OutboxError) -> [OutboxEntry.ID]

    /// Quarantines the entry, keeping `failure` as why, and every entry that
    /// depends on it (cause ``/OutboxModel/OutboxFailure/Cause/dependency(_:)``).
    func quarantine(_ id: OutboxEntry.ID, _ failure: OutboxFailure) async throws(OutboxError) -> OutboxCascade

    /// Leaves the entry in `conflict` for a person to resolve, keeping
    /// `failure` as why.
    func markConflict(_ id: OutboxEntry.ID, _ failure: OutboxFailure) async throws(OutboxError)

    /// Puts a `quarantined` or `conflict` entry back to `pending` (fresh attempts);
    /// dependents quarantined because of it come back too.
    func retry(_ id: OutboxEntry.ID, at now: Date) async throws(OutboxError) -> OutboxCascade

    /// Removes an entry that is not in flight; its dependents are quarantined.
    func discard(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCascade

    /// "Send now": makes entries waiting for their retry time (`waitingToRetry`,
    /// not yet due) due at `now`, keeping their attempts; `ids` `nil` for
    /// every such entry. Returns the entries brought forward. The default
    /// brings none forward.
    func bringForward(_ ids: [OutboxEntry.ID]?, at now: Date) async throws(OutboxError) -> [OutboxEntry.ID]

    /// Removes the entries quarantined at or before `cutoff` (the
    /// retention of quarantined entries); returns them. The default removes none.
    func removeQuarantined(before cutoff: Date) async throws(OutboxError) -> [OutboxEntry.ID]

    /// One entry, with its request, or `nil`.
    func entry(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntry?

    /// Entries matching `filter`, in sequence order.
    ///
    /// - Complexity: O(*n* log *n*) in live entries to match and order them
    ///   (from memory), plus one read of the matched entries' bodies.
    func entries(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry]

    /// Counts and bytes by status.
    func summary() async throws(OutboxError) -> OutboxSummary

    /// Where one entry stands, without reading its request: `succeeded` for
    /// a delivered entry whose completion is still kept, `nil` for an id the
    /// store does not know (never enqueued, discarded, or delivered longer
    /// ago than `mappingRetention`). The default reads ``entry(_:)`` and
    /// ``completion(of:)``.
    func state(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntryState?

    /// Why `id` has not gone out yet, or that it has: what holds it (its
    /// retry time, the head of its scope, a parent not delivered, a
    /// person's decision), when it may go and what would move it. A store
    /// explains what it knows; `OutboxDispatcher.explain(_:)` adds the
    /// dispatcher's own state (paused, offline, stopped, no handler). The
    /// default reads ``entry(_:)``, ``completion(of:)`` and the parents'
    /// entries: it cannot see scope order.
    ///
    /// - Complexity: in the stores this package ships, O(*d*) for *d*
    ///   dependencies, from memory: no body is read.
    func explain(_ id: OutboxEntry.ID, at now: Date) async throws(OutboxError) -> OutboxExplanation

    /// The ids of the entries matching `filter`, in sequence order, without
    /// reading their requests. The default reads ``entries(matching:)``.
    func ids(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry.ID]

    /// Where the store announces which entries each change touched, once the
    /// change has its configured durability; `nil` (the default) for a store
    /// that cannot tell — a dispatcher then announces only the changes it
    /// makes itself.
    var changeFeed: OutboxChangeFeed? { get }

    /// Keeps `snapshot` where readers of this queue find it without the
    /// queue's lock (`outbox top`): ``LogOutboxStore``
    /// writes it beside the queue, sealed when the queue is; the default
    /// keeps nothing. The dispatcher calls it
    /// (`OutboxDispatcherConfiguration.snapshotInterval`).
    func publishSnapshot(_ snapshot: OutboxQueueSnapshot) async throws(OutboxError)

    /// Live entries that depend on `id`.
    func dependents(of id: OutboxEntry.ID) async throws(OutboxError) -> [OutboxEntry.ID]

    /// Whether `id` has been delivered, and the server id it received
    /// (the mapping for `local:<id>`).
    func completion(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCompletion?

    /// Removes every entry and mapping of this partition.
    func clear() async throws(OutboxError)

    /// Drops succeeded entries past the audit window and stale mappings.
    func prune(at now: Date) async throws(OutboxError)

    /// Waits for everything to be durable and releases the store.
    func close() async throws(OutboxError)
}

/// What ``OutboxStore/claimDue(at:limit:lease:accepting:)`` handed out.
public struct OutboxClaim: Sendable, Hashable {
    /// The claimed entries, now in flight with their attempt counted, best first.
    public var entries: [OutboxEntry]
    /// Due entries left alone because their type was not accepted: id → type.
    public var unaccepted: [OutboxEntry.ID: String]

    public init(entries: [OutboxEntry], unaccepted: [OutboxEntry.ID: String] = [:]) {
        self.entries = entries
        self.unaccepted = unaccepted
    }
}

/// One delivered entry, for ``OutboxStore/recordSuccesses(_:at:)``.
public struct OutboxSuccess: Sendable, Hashable {
    public var id: OutboxEntry.ID
    /// The server's id for it (the mapping of its `local:` reference), if any.
    public var serverID: String?

    public init(id: OutboxEntry.ID, serverID: String?) {
        self.id = id
        self.serverID = serverID
    }
}

extension OutboxStore {
    public func recordSuccesses(_ successes: [OutboxSuccess], at now: Date) async throws(OutboxError)
        -> [OutboxEntry.ID: OutboxError]
    {
        var refused: [OutboxEntry.ID: OutboxError] = [:]
        for success in successes {
            do throws(OutboxError) {
                try await recordSuccess(success.id, serverID: success.serverID, at: now)
            } catch where error.code == .closed || error.code == .storage {
                throw error
            } catch {
                refused[success.id] = error
            }
        }
        return refused
    }

    /// A failed attempt that counts, with no answer time or unknown
    /// outcome to keep: ``OutboxStore/recordFailure(_:_:retryAt:countsAsAttempt:serverAnsweredAt:outcomeUnknownAt:)``.
    public func recordFailure(
        _ id: OutboxEntry.ID, _ failure: OutboxFailure, retryAt: Date
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await recordFailure(
            id, failure, retryAt: retryAt, countsAsAttempt: true, serverAnsweredAt: nil, outcomeUnknownAt: nil)
    }

    public func reclaimExpiredLeases(at now: Date) async throws(OutboxError) -> [OutboxEntry.ID] { [] }

    /// A claim built from ``dueEntries(at:limit:)`` and
    /// ``beginAttempt(_:at:lease:)``, for stores that have no faster way.
    /// It is atomic only if nothing else begins attempts on this store.
    public func claimDue(
        at now: Date, limit: Int, lease: Duration, accepting: (String) -> Bool
    ) async throws(OutboxError) -> OutboxClaim {
        var claim = OutboxClaim(entries: [])
        for entry in try await dueEntries(at: now, limit: limit) {
            guard accepting(entry.type) else {
                claim.unaccepted[entry.id] = entry.type
                continue
            }
            claim.entries.append(try await beginAttempt(entry.id, at: now, lease: lease))
        }
        return claim
    }
}

/// A delivered entry: its server id, and when it was acknowledged.
public struct OutboxCompletion: Sendable, Hashable {
    public var serverID: String?
    public var syncedAt: Date
}
