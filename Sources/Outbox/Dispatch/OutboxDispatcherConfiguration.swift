import Foundation
import Logging
import Metrics
import OutboxStorage
import OutboxModel

/// How an ``OutboxDispatcher`` paces, times and retries deliveries.
public struct OutboxDispatcherConfiguration: Sendable {
    /// At most this many deliveries at once. A scope always sends one at a
    /// time, in order; so do entries without a scope under the store's
    /// default ``/OutboxStorage/OutboxStoreConfiguration/UnscopedDelivery/inOrder`` (they
    /// take one slot between them). With
    /// ``/OutboxStorage/OutboxStoreConfiguration/UnscopedDelivery/concurrent``, unscoped
    /// entries fill every free slot. Default 4.
    public var maximumConcurrentDeliveries = 4
    /// Exponential backoff with full jitter; default base 1 s, cap 5 min.
    public var backoff = OutboxBackoff()
    /// An entry the server first answered longer ago than this is
    /// quarantined instead of retried (the seeds' "older than N days → give
    /// up", but never silently). Counted from the server's first answer,
    /// not from the enqueue: while the server cannot be reached at all
    /// (``OutboxOutcome/notSent(reason:)``, the device offline) an entry
    /// never expires. And it is judged only when the server answers again: an
    /// entry past its age is sent once more, and quarantined only if that
    /// attempt fails too — a week offline after a 503 does not kill it
    /// unasked. Default 7 days.
    public var maximumAge: Duration? = .seconds(7 * 24 * 3600)
    /// HTTP statuses that say the server cannot take requests now, not that
    /// this request failed: such a transient answer is retried (after the
    /// server's clamped `Retry-After`, or the capped ``backoff``) **without
    /// using up `maxAttempts`**, until ``maximumAge``. So a day of 503s
    /// never quarantines a write, while a request that keeps failing with a
    /// 500 (a server bug it triggers) is quarantined after `maxAttempts`.
    /// Default 429, 502, 503 and 504.
    public var unavailableStatuses: Set<Int> = [429, 502, 503, 504]
    /// A server's `Retry-After` is kept within these bounds: `Retry-After: 0`
    /// or a past date would re-send at once and burn the attempts in
    /// milliseconds; a huge one would park the entry for days. Default 1 s … 1 h.
    public var retryAfterFloor: Duration = .seconds(1)
    public var retryAfterCap: Duration = .seconds(3600)
    /// The short delay before resending an interrupted attempt (sent, answer
    /// lost): full jitter over `base · 2^(n−1)` for the n-th interruption in
    /// a row, never more than `cap`. Default 250 ms … 5 s.
    public var interruptedBackoff = OutboxBackoff(base: .milliseconds(250), cap: .seconds(5))
    /// How long the server keeps idempotency keys (Stripe: 24 hours; most
    /// middlewares: a configured expiry). Exactly-once holds only inside it:
    /// a resend after the server forgot the key is a new request. So an
    /// entry with an attempt of unknown outcome (sent, answer lost; or cut
    /// short by a crash) made longer ago than this — less one lease,
    /// `deliveryTimeout + leaseGrace`, because after a crash only the lease's
    /// end is known — is not resent blindly: it is left in `conflict` for
    /// the app, which resends it with the same key
    /// (``OutboxDispatcher/retry(_:)``) or marks it delivered with the server
    /// id it found (``OutboxDispatcher/markDelivered(_:serverID:)``).
    /// Entries never attempted, or whose attempts all had definite outcomes,
    /// are not affected. `nil` turns the guard off (a server that keeps keys
    /// forever). Default 24 hours.
    public var keyRetention: Duration? = .seconds(24 * 3600)
    /// The delay between polls of an entry the server reports still in
    /// progress, when it gives no `Retry-After`: uniform in
    /// `[c/2, c]` with `c = min(cap, base · 2^(n−1))` for the n-th poll in a
    /// row. Polls never count as failed attempts. Default 250 ms … 4 s.
    public var inProgressBackoff = OutboxBackoff(base: .milliseconds(250), cap: .seconds(4))
    /// How long an entry may be reported in progress, counted from the first
    /// such answer in a row, before it is left in `conflict` for the app
    /// ("the server still reports the first request in progress after …"):
    /// a server whose first request never finishes must not be polled
    /// forever. Default 5 minutes.
    public var inProgressBudget: Duration = .seconds(300)
    /// A delivery running longer is cancelled and counts as a transient
    /// failure. Default 60 s.
    public var deliveryTimeout: Duration = .seconds(60)
    /// How long before the deadline of ``OutboxDispatcher/drain(until:)``
    /// it stops starting attempts and interrupts the running ones, so that
    /// their outcomes are recorded and it returns before the deadline
    /// (never more than a quarter of the time the drain is given). Default 1 s.
    public var deadlineMargin: Duration = .seconds(1)
    /// The attempt's lease outlives the timeout by this much.
    public var leaseGrace: Duration = .seconds(30)
    /// How long a quarantined entry is kept for the app or a person to
    /// inspect, retry or discard; after it, the dispatcher's periodic prune
    /// removes it with a ``/OutboxModel/OutboxEvent/discarded(_:because:)`` event.
    /// Counted from the quarantine. `nil` (the default) keeps quarantined
    /// entries until the app decides: each is a write the user made.
    public var quarantineRetention: Duration?
    /// How often, at most, a drain also prunes succeeded entries past their
    /// audit window, stale id mappings and quarantined entries past
    /// ``quarantineRetention``. Default one hour.
    public var pruneInterval: Duration = .seconds(3600)
    /// A queue that holds unsent writes and delivers none of them — nor sets
    /// any aside — for this long is stalled: the dispatcher publishes one
    /// ``/OutboxModel/OutboxEvent/stalled(_:)`` naming why the oldest write
    /// waits (offline, paused, a parent quarantined, a server answering 503,
    /// a `Retry-After`…), logs it once as a warning, and sets the
    /// `outbox_stalled` gauge to 1 until the queue moves again. `nil` turns
    /// the watch off. Default 15 minutes.
    public var stallThreshold: Duration? = .seconds(15 * 60)
    /// While the dispatcher runs (from ``OutboxDispatcher/start(connectivity:)``,
    /// ``OutboxDispatcher/flush()`` or ``OutboxDispatcher/drain(until:)`` to
    /// ``OutboxDispatcher/stop()``), how often it writes the queue's
    /// ``/OutboxModel/OutboxQueueSnapshot`` — counts, drain rate, attempt
    /// latency, the oldest waiting writes and why each waits, failures by
    /// cause — through the store's `publishSnapshot(_:)`, so that `outbox top`
    /// can follow a queue this process holds open.
    /// Only when something changed, and once more at ``OutboxDispatcher/stop()``.
    /// ``/OutboxStorage/LogOutboxStore`` keeps it in a file beside the queue, unsynced:
    /// one small write per interval while the queue moves. `nil` (the
    /// default) writes none; `outbox drain` writes one every second.
    public var snapshotInterval: Duration?
    /// Seed for the backoff jitter (tests); `nil` uses system randomness.
    public var randomSeed: UInt64?
    public var logger = Logger(label: "outbox.dispatcher")
    /// Where the dispatcher's counters, timer and gauge go (Docs/DISPATCH.md,
    /// "Metrics"); `nil` (the default) uses the process's bootstrapped
    /// `MetricsSystem`. A server running several dispatchers, or a test,
    /// gives each its own.
    public var metricsFactory: (any MetricsFactory)?

    public init() {}
}

/// What one ``OutboxDispatcher/flush()`` did.
public struct OutboxFlushReport: Sendable, Hashable {
    public var delivered = 0
    public var waitingToRetry = 0
    public var quarantined = 0
    public var conflicts = 0
    public var discarded = 0
    /// Attempts sent whose answer was lost (resent promptly; not failures).
    public var interrupted = 0
    /// Attempts that never reached the server (not counted toward `maxAttempts`).
    public var notSent = 0
    /// In-progress polls: the server was still processing the key.
    public var inProgress = 0
    /// Deliveries the server answered from its idempotency record (a replay
    /// of an earlier attempt's answer that was lost); also in `delivered`.
    public var replayed = 0
    /// Entries this run left in `conflict` for the app although the server
    /// reported no conflict: already processed, in progress past the budget,
    /// or an unknown outcome older than the server's key retention. Also in
    /// `conflicts`.
    public var needsAttention = 0
    /// Entries left alone because no handler handles their type.
    public var unhandled = 0
    /// The errors that ended an attempt early (a store failure while
    /// recording it, naming the entry in ``/OutboxModel/OutboxError/entry``), or a run:
    /// a failed claim, or a configuration the dispatcher refuses.
    public var errors: [OutboxError] = []

    public init() {}

    /// Adds `other`'s counts and errors to this report (for totals over
    /// several flushes).
    public mutating func add(_ other: OutboxFlushReport) {
        delivered += other.delivered
        waitingToRetry += other.waitingToRetry
        quarantined += other.quarantined
        conflicts += other.conflicts
        discarded += other.discarded
        interrupted += other.interrupted
        notSent += other.notSent
        inProgress += other.inProgress
        replayed += other.replayed
        needsAttention += other.needsAttention
        unhandled += other.unhandled
        errors += other.errors
    }
}
