import Crypto
import Foundation
import OutboxLog

/// How an ``OutboxStore`` limits, keeps and protects its entries.
public struct OutboxStoreConfiguration: Sendable {
    /// What happens when an enqueue would exceed a limit.
    public enum FullPolicy: Sendable, Hashable {
        /// Fail the enqueue with ``/OutboxModel/OutboxError/Code/full``.
        case reject
        /// Discard the oldest `quarantined` entries until the new one fits; if it
        /// still does not fit, fail with `full`. Pending entries are never evicted.
        case evictOldestQuarantined
    }

    /// How entries without a scope are sent.
    public enum UnscopedDelivery: Sendable, Hashable {
        /// One at a time, in the order they were enqueued, as if they all
        /// shared one scope: an entry waiting to retry holds the ones after it until
        /// its retry (quarantined and conflicting entries step aside, and an
        /// entry with dependencies waits for them outside the queue). What
        /// an outbox is usually expected to do: the user's writes reach the
        /// server in the order the user made them.
        case inOrder
        /// Each on its own, up to the dispatcher's
        /// `maximumConcurrentDeliveries` at once, highest priority first: for
        /// writes that do not depend on one another's order (faster, and one
        /// failing write holds nothing back).
        case concurrent
    }

    /// How entries without a scope are sent: in order, one at a time
    /// (``UnscopedDelivery/inOrder``, the default), or concurrently
    /// (``UnscopedDelivery/concurrent``). Entries with a scope always go in
    /// order within their scope, and scopes always proceed independently of
    /// one another — and of the unscoped entries.
    public var unscopedDelivery: UnscopedDelivery = .inOrder

    /// At most this many entries per partition (all statuses). Default: no limit.
    public var maximumEntries: Int?
    /// At most this many stored bytes per partition. Default: no limit.
    public var maximumBytes: Int?
    public var fullPolicy: FullPolicy = .reject
    /// Attempts before a transient failure quarantines an entry, unless the
    /// action says otherwise. Default 10.
    public var defaultMaximumAttempts = 10
    /// Keep succeeded entries this long for auditing; `nil` (default)
    /// removes them at once.
    public var succeededRetention: Duration?
    /// Keep the local→server id mapping of a succeeded entry this long after
    /// no entry depends on it any more. Default 7 days.
    public var mappingRetention: Duration = .seconds(7 * 24 * 3600)
    /// Seal everything the store writes with AES-GCM under this key: every
    /// field of every entry, its state, the server's ids, and the user's name
    /// (directories and log keys are keyed hashes). Sizes, counts and order
    /// stay visible; see the article "Protecting the outbox" in `Outbox`. One key per root.
    public var encryptionKey: SymmetricKey?
    /// Whether every encrypted queue under a root shares one key (default
    /// `true`). A queue's directory is named by its key, so a wrong key
    /// cannot be told from a new user's by name: with `true`, opening a new
    /// queue under a key that opens none of the root's encrypted queues fails
    /// with ``/OutboxModel/OutboxError/Code/wrongKey``. Set `false` if each user has a key
    /// of their own: such a key then creates its user's queue, and a wrong
    /// key looks like a new user with an empty queue.
    public var oneKeyPerRoot = true

    /// Durability of the enqueue (the commit point). Default `durable`.
    public var enqueueDurability: Durability = .durable
    /// Durability of the record that starts an attempt. Default `written`:
    /// a crash of the app still counts the attempt; a power loss may not.
    public var attemptDurability: Durability = .written
    /// Durability of the success mark (the tombstone and the server id, in
    /// one batch). Default `written`: it survives an app kill, and becomes
    /// durable with the next sync (the next durable enqueue or outcome, or
    /// `close`). A power loss before then may undo it; the entry is then
    /// sent again with the same idempotency key, and the server answers from
    /// the response it stored the first time. Set `durable` if your server
    /// does not honour idempotency keys — at the cost of one sync per
    /// delivery, shared between concurrent deliveries.
    public var successDurability: Durability = .written
    /// Durability of the other outcomes: failure, quarantine, conflict,
    /// retry, discard. Default `durable`: a quarantine that the app showed to
    /// its user must not come back to life after a power loss.
    public var outcomeDurability: Durability = .durable

    /// Payloads larger than this many bytes are kept in a file beside the
    /// log (`payloads/`, sealed like everything else when the store is
    /// encrypted), not in the log's record, up to ``maximumPayloadBytes``:
    /// a 50 MB photo upload fits, and the log's records stay small. Such an
    /// entry's ``/OutboxModel/OutboxEntry/payload`` is empty and its
    /// ``/OutboxModel/OutboxEntry/largePayload`` reads the file (see the article "Large payloads" in `Outbox`).
    /// Default 1 MiB; `nil` keeps every payload in its record (then at most
    /// `log.maximumRecordSize`). The in-memory store keeps every payload in
    /// memory, but accepts the same sizes.
    public var largePayloadThreshold: Int? = 1 << 20
    /// The largest payload accepted when it goes to a file (see
    /// ``largePayloadThreshold``). Default 1 GiB; at most
    /// ``/OutboxModel/OutboxLimits/maximumPayloadFileBytes``.
    public var maximumPayloadBytes = 1 << 30

    /// Called at each step of writing or deleting a payload file: the
    /// torture suite kills the process there.
    package var payloadFileObserver: @Sendable (PayloadFileStep) -> Void = { _ in }

    /// The time of what the store's calls do not date themselves (when an
    /// entry was quarantined): the system's clock; the store's test
    /// vectors fix it, so that their bytes do not depend on the day.
    package var clock: @Sendable () -> Date = { Date() }

    /// How many spooled records, and spools, a look holds in memory at
    /// once (``SpoolRound``): tests make rounds small.
    package var spoolRound = SpoolRound()

    /// The configuration of the log under each partition. The store turns
    /// on the log's index checkpoints and lets its open return before the
    /// index is loaded: with its own checkpoint (`SCHEDULE`, written at the
    /// same moments and at the same interval), a reopened store answers its
    /// first enqueue without reading the queue (Docs/OUTBOX.md, "Reopening").
    public var log = OutboxLog.Configuration()

    public init() {
        log.segmentSize = 4 << 20
        log.indexCheckpoints = true
        log.opensBeforeIndexIsLoaded = true
    }
}
