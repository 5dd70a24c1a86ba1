import DequeModule
import HeapModule
import OutboxModel

/// The state machine and the send order of one partition, shared by every
/// store so they behave identically.
///
/// Ordering rules:
/// - entries with a scope are sent one at a time, in sequence order: only
///   the first unfinished entry of a scope (its *head*) may be sent, and
///   only when nothing of that scope is in flight; a `waitingToRetry` head holds the
///   scope until its retry; `quarantined` and `conflict` entries leave the scope, so
///   they never block it;
/// - once the head has been attempted, it stays the head until it leaves
///   the scope: an older entry brought back by `retry` queues behind it
///   (it may have reached the server already), never two in flight;
/// - an entry is sent only after every dependency has succeeded;
/// - among the entries that may go, higher priority first, then lower
///   sequence.
///
/// No cycle of waiting can form: an entry's sequence is always greater than
/// that of every dependency it waits for, and the only entry a scope lets
/// out of sequence order (an attempted head) waits for nothing of its scope.
/// A coalescing replacement therefore keeps the replaced entry's place only
/// if that place is behind all its dependencies.
///
/// Every mutation validates first and throws without changing anything.
/// The type is split by job into `Scheduler+<Job>.swift` files (loading,
/// enqueue, scope queues, dependencies, due selection, outcomes, removal,
/// keys, status, queries, batches, controls). Swift keeps stored properties
/// in this declaration, so the state is here, each property saying which
/// job owns it. Nothing outside `Sources/OutboxStorage/Scheduling` writes it (stores
/// read ``entries``, ``completions``, ``strings`` and ``failure(_:)`` under
/// their lock); the fuzz harness reads a few properties (`package`, set only
/// inside the module).
package struct Scheduler: Sendable {
    let partition: String
    let configuration: OutboxStoreConfiguration

    /// Every live entry's metadata. Owned by status (``commit(_:)``,
    /// `Scheduler+Status.swift`); written by every job.
    package internal(set) var entries = EntryTable()
    /// Why each entry last failed. Owned by outcomes (`Scheduler+Outcomes.swift`).
    package internal(set) var failures: [OutboxEntryID: FailureInfo] = [:]
    /// Delivered entries' marks (server id, app key). Owned by outcomes
    /// (``succeed(_:serverID:now:)``); read by dependencies.
    package internal(set) var completions: [OutboxEntryID: Completion] = [:]
    /// Interned scopes, types and coalescing keys. Owned by enqueue and
    /// loading (retain), removal (release).
    package internal(set) var strings = StringInterner()
    /// The sequence number of the next new entry. Owned by enqueue
    /// (`Scheduler+Enqueue.swift`) and loading.
    package internal(set) var nextSequence: UInt64 = 1

    /// Unfinished entries (pending, waitingToRetry, in flight) of each scope, in
    /// sequence order. Owned by scope queues (`Scheduler+ScopeQueues.swift`).
    var scopes: [UInt32: Deque<OutboxEntryID>] = [:]
    /// Candidates whose time has come, best first. Owned by due selection
    /// (`Scheduler+DueSelection.swift`).
    var ready = Heap<Candidate>()
    /// Candidates by the time they may go. Owned by due selection.
    var waiting = Heap<Timed>()
    /// Unsent entries by creation time, oldest first, for the summary's
    /// oldest pending age; stale items (delivered, quarantined, replaced)
    /// are dropped when they reach the top. Owned by due selection.
    var unsentByCreation = Heap<Aged>()
    /// Candidates parked until a dependency succeeds: parent → children.
    /// Owned by due selection (parks) and dependencies (`Scheduler+Dependencies.swift`).
    var blocked: [OutboxEntryID: [OutboxEntryID]] = [:]
    /// Every live entry that depends on a live parent: parent → children.
    /// Owned by dependencies.
    var dependents: [OutboxEntryID: [OutboxEntryID]] = [:]
    /// Coalescing key → its live, undelivered entries, newest last (enqueue
    /// order, which is sequence order: a replacement takes the place only
    /// of the newest). The key's holder, the one a coalescing enqueue may
    /// replace, is the newest, and only while it is `pristine`. Owned by
    /// keys (`Scheduler+Keys.swift`).
    ///
    /// The holder is a function of what is stored, not of history, so a
    /// reload finds the same one: an older entry never holds the key again
    /// because a newer one left `pending` (replacing it would put the newest
    /// value in the older one's place, ahead of the newer one's).
    var keyed: [UInt32: [OutboxEntryID]] = [:]
    /// Entries with a coalescing key whose status never changed since their
    /// enqueue (on disk: no state record). Owned by keys; ended by status.
    package internal(set) var pristine: Set<OutboxEntryID> = []
    /// App-supplied idempotency key → the entry (live, or delivered while its
    /// completion is kept) holding it, and the reverse. Derived keys are
    /// not listed: the id already identifies them. Owned by keys.
    var keyHolders: [String: OutboxEntryID] = [:]
    /// Entry → its app-supplied idempotency key. Owned by keys.
    package internal(set) var appKeys: [OutboxEntryID: String] = [:]
    /// Entries per status. Owned by status (``adjust(_:count:bytes:)``).
    var counts: [OutboxStatus: Int] = [:]
    /// Stored bytes per status. Owned by status.
    var bytes: [OutboxStatus: Int] = [:]
    /// Stored bytes of every entry (the partition's limit). Owned by status.
    var totalBytes = 0

    package init(partition: String, configuration: OutboxStoreConfiguration) {
        self.partition = partition
        self.configuration = configuration
    }
}
