import DequeModule
import Foundation
import HeapModule

/// A change a store must make durable, in the order given.
enum StoreChange: Sendable, Hashable {
    /// A new entry's body (the store holds the request).
    case newEntry(OutboxEntryID)
    /// The entry's current state (status, attempts, times, failure).
    case state(OutboxEntryID)
    /// The entry is gone.
    case remove(OutboxEntryID)
    /// The entry's completion mark (success, server id).
    case completion(OutboxEntryID)
    case removeCompletion(OutboxEntryID)
}

/// The state machine and the send order of one partition, shared by every
/// store so they behave identically.
///
/// Ordering rules:
/// - entries with a scope are sent one at a time, in sequence order: only
///   the first unfinished entry of a scope (its *head*) may be sent, and
///   only when nothing of that scope is in flight; a `failed` head holds the
///   scope until its retry; `dead` and `conflict` entries leave the scope, so
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
struct Scheduler: Sendable {
    let partition: String
    let configuration: OutboxStoreConfiguration

    private(set) var entries = EntryTable()
    private(set) var failures: [OutboxEntryID: FailureInfo] = [:]
    private(set) var completions: [OutboxEntryID: Completion] = [:]
    private(set) var strings = StringInterner()
    private(set) var nextSequence: UInt64 = 1

    /// Unfinished entries (pending, failed, in flight) of each scope, in sequence order.
    private var scopes: [UInt32: Deque<OutboxEntryID>] = [:]
    /// Candidates whose time has come, best first.
    private var ready = Heap<Candidate>()
    /// Candidates by the time they may go.
    private var waiting = Heap<Timed>()
    /// Unsent entries by creation time, oldest first, for the summary's
    /// oldest pending age; stale items (delivered, quarantined, replaced)
    /// are dropped when they reach the top.
    private var unsentByCreation = Heap<Aged>()
    /// Candidates parked until a dependency succeeds: parent → children.
    private var blocked: [OutboxEntryID: [OutboxEntryID]] = [:]
    /// Every live entry that depends on a live parent: parent → children.
    private var dependents: [OutboxEntryID: [OutboxEntryID]] = [:]
    /// Coalescing key → its live, undelivered entries, newest last (enqueue
    /// order, which is sequence order: a replacement takes the place only
    /// of the newest). The key's holder, the one a coalescing enqueue may
    /// replace, is the newest, and only while it is `pristine`.
    ///
    /// The holder is a function of what is stored, not of history, so a
    /// reload finds the same one: an older entry never holds the key again
    /// because a newer one left `pending` (replacing it would put the newest
    /// value in the older one's place, ahead of the newer one's).
    private var keyed: [UInt32: [OutboxEntryID]] = [:]
    /// Entries with a coalescing key whose status never changed since their
    /// enqueue (on disk: no state record).
    private var pristine: Set<OutboxEntryID> = []
    /// App-supplied idempotency key → the entry (live, or delivered while its
    /// completion is kept) holding it, and the reverse. Derived keys are
    /// not listed: the id already identifies them.
    private(set) var keyHolders: [String: OutboxEntryID] = [:]
    private(set) var appKeys: [OutboxEntryID: String] = [:]
    private var counts: [OutboxStatus: Int] = [:]
    private var bytes: [OutboxStatus: Int] = [:]
    private(set) var totalBytes = 0

    init(partition: String, configuration: OutboxStoreConfiguration) {
        self.partition = partition
        self.configuration = configuration
    }

    // MARK: - Heap items

    /// 32 bytes (fields in this order: a leading `Int16` would pad to 40).
    struct Candidate: Comparable, Sendable {
        var sequence: UInt64
        var id: OutboxEntryID
        var version: UInt32
        var priority: Int16
        /// "Sent first" is "smaller": higher priority, then lower sequence.
        static func < (a: Self, b: Self) -> Bool {
            a.priority != b.priority ? a.priority > b.priority : a.sequence < b.sequence
        }
    }

    struct Aged: Comparable, Sendable {
        var createdAt: Int64
        var sequence: UInt64
        var id: OutboxEntryID
        static func < (a: Self, b: Self) -> Bool {
            a.createdAt != b.createdAt ? a.createdAt < b.createdAt : a.sequence < b.sequence
        }
    }

    struct Timed: Comparable, Sendable {
        var when: Int64
        var sequence: UInt64
        var id: OutboxEntryID
        var version: UInt32
        static func < (a: Self, b: Self) -> Bool { a.when != b.when ? a.when < b.when : a.sequence < b.sequence }
    }

    // MARK: - Loading

    /// Adds an entry read back from storage.
    ///
    /// - Parameter unchanged: no state change was ever recorded for it since
    ///   its enqueue. Only such an entry may still be replaced by coalescing
    ///   (the same rule as at run time, where any status change ends it).
    mutating func load(_ metadata: EntryMetadata, failure: FailureInfo?, unchanged: Bool, appKey: String? = nil) {
        entries[metadata.id] = metadata
        if let appKey { holdKey(appKey, for: metadata.id) }
        if let failure { failures[metadata.id] = failure }
        if unchanged && metadata.coalescing != 0 && metadata.status == .pending { pristine.insert(metadata.id) }
        adjust(metadata.status, count: 1, bytes: Int(metadata.storedBytes))
        nextSequence = max(nextSequence, metadata.sequence + 1)
    }

    /// Adds a completion read back from storage.
    mutating func loadCompletion(_ id: OutboxEntryID, _ completion: Completion) {
        completions[id] = completion
        if let key = completion.idempotencyKey { holdKey(key, for: id) }
    }

    // MARK: - Checkpoints

    /// What a store checkpoint keeps: what ``load(_:failure:unchanged:appKey:)``
    /// and ``loadCompletion(_:_:)`` were given, as they stand now. Taken
    /// under the store's lock; the tables are shared, not copied (a page or
    /// dictionary the scheduler then changes is copied once).
    struct CheckpointContent: Sendable {
        var entries: EntryTable
        var failures: [OutboxEntryID: FailureInfo]
        var completions: [OutboxEntryID: Completion]
        var strings: StringInterner
        /// Entries whose status never changed since their enqueue, among
        /// those with a coalescing key (on disk: no state record).
        var pristine: Set<OutboxEntryID>
        var appKeys: [OutboxEntryID: String]
        var nextSequence: UInt64
    }

    var checkpointContent: CheckpointContent {
        CheckpointContent(
            entries: entries, failures: failures, completions: completions, strings: strings, pristine: pristine,
            appKeys: appKeys, nextSequence: nextSequence)
    }

    mutating func reserveEntries(_ count: Int) { entries.reserveCapacity(count) }

    /// Starts a load from a checkpoint: its names (entries then refer to
    /// them by their ids) and its next sequence number.
    mutating func restore(strings restored: StringInterner, nextSequence restoredNext: UInt64) {
        strings = restored
        nextSequence = max(nextSequence, restoredNext)
    }

    /// Forgets an entry loaded from a checkpoint whose records changed
    /// after it: the reverse of ``load(_:failure:unchanged:appKey:)``.
    mutating func unload(_ id: OutboxEntryID) {
        guard let metadata = entries[id] else { return }
        entries[id] = nil
        failures[id] = nil
        pristine.remove(id)
        releaseKey(of: id)
        adjust(metadata.status, count: -1, bytes: Int(metadata.storedBytes))
        strings.release(metadata.scope)
        strings.release(metadata.type)
        strings.release(metadata.coalescing)
    }

    /// Forgets a completion loaded from a checkpoint that is gone since.
    mutating func unloadCompletion(_ id: OutboxEntryID) {
        guard completions.removeValue(forKey: id) != nil, entries[id] == nil else { return }
        releaseKey(of: id)
    }

    /// Adds, once loading is over, an entry admitted while the store was
    /// still loading: it has no app key, coalescing key or dependency, and
    /// its sequence number is above every loaded one, so it goes where
    /// ``enqueue(_:storedBytes:now:)`` would have put it.
    mutating func admitLoaded(_ metadata: EntryMetadata, scope: String?, type: String) {
        guard entries[metadata.id] == nil, completions[metadata.id] == nil else { return }
        var entry = metadata
        entry.scope = strings.retain(scope)
        entry.type = strings.retain(type)
        entry.coalescing = 0
        entry.version = 1
        entries[entry.id] = entry
        adjust(entry.status, count: 1, bytes: Int(entry.storedBytes))
        nextSequence = max(nextSequence, entry.sequence + 1)
        insertIntoScope(entry)
        noteUnsent(entry)
        consider(entry.id)
    }

    /// Rebuilds the send order after loading; entries a crash left in flight
    /// come back pending with their attempt counted. Returns their new state
    /// to persist. `sequenceFloor` keeps sequence numbers increasing across
    /// restarts even when every entry is gone.
    mutating func finishLoading(now: Int64, sequenceFloor: UInt64) -> [StoreChange] {
        nextSequence = max(nextSequence, sequenceFloor)
        var changes: [StoreChange] = []
        // Only entries in a send queue, with a coalescing key or with
        // dependencies need the order. Sort the (id, sequence) pairs, not
        // ids through table lookups: loads insert in sequence order, and the
        // sort is linear on input in order. An attempted head comes first
        // in its queue, wherever its sequence falls (an older entry may have
        // been retried behind it).
        var order: [(OutboxEntryID, UInt64, Bool)] = []
        var inFlight: [(OutboxEntryID, UInt64)] = []
        order.reserveCapacity(entries.count)
        entries.forEach { entry in
            if entry.status == .inFlight { inFlight.append((entry.id, entry.sequence)) }
            if queue(of: entry) != nil || entry.coalescing != 0 || entry.dependencies != nil {
                order.append((entry.id, entry.sequence, entry.attempts > 0 && entry.status.holdsScope))
            }
        }
        order.sort { $0.2 != $1.2 ? $0.2 : $0.1 < $1.1 }
        inFlight.sort { $0.1 < $1.1 }
        for (id, _) in inFlight {
            // Cut short by the crash: the request may have been applied.
            var entry = entries[id]!
            markOutcomeUnknown(id, since: entry.when)
            setStatus(&entry, .pending)
            entry.when = now
            entries[id] = entry
            changes.append(.state(id))
        }
        for (id, _, _) in order {
            let entry = entries[id]!
            if entry.status.holdsScope, let queue = queue(of: entry) { scopes[queue, default: []].append(id) }
            if entry.coalescing != 0 && entry.status != .succeeded { keyed[entry.coalescing, default: []].append(id) }
            // Only younger entries depend on a live one (as at run time): an
            // older entry naming the same id depended on an earlier entry with
            // that id, discarded since.
            for parent in entry.dependencies ?? [] where (entries[parent]?.sequence ?? .max) < entry.sequence {
                dependents[parent, default: []].append(id)
            }
        }
        for key in keyed.keys { keyed[key]!.sort { entries[$0]!.sequence < entries[$1]!.sequence } }
        // Every heap built in one pass: due candidates straight into `ready`,
        // the others into `waiting`, every unsent entry by creation time.
        var due: [Candidate] = []
        var later: [Timed] = []
        var unsent: [Aged] = []
        unsent.reserveCapacity(entries.count)
        entries.forEach { entry in
            if entry.status.holdsScope {
                unsent.append(Aged(createdAt: entry.createdAt, sequence: entry.sequence, id: entry.id))
            }
            guard entry.status.isSendable, isHead(entry) else { return }
            if entry.when <= now {
                due.append(Candidate(sequence: entry.sequence, id: entry.id, version: entry.version, priority: entry.priority))
            } else {
                later.append(Timed(when: entry.when, sequence: entry.sequence, id: entry.id, version: entry.version))
            }
        }
        ready = Heap(due)
        waiting = Heap(later)
        unsentByCreation = Heap(unsent)
        return changes
    }

    /// Interns a string for an entry being loaded.
    mutating func intern(_ name: String?) -> UInt32 { strings.retain(name) }

    // MARK: - Queries

    func metadata(_ id: OutboxEntryID) -> EntryMetadata? { entries[id] }
    func failure(_ id: OutboxEntryID) -> FailureInfo? { failures[id] }
    func completion(_ id: OutboxEntryID) -> Completion? { completions[id] }

    var summary: OutboxSummary { OutboxSummary(counts: counts.filter { $0.value > 0 }, bytes: bytes.filter { $0.value > 0 }) }

    /// Live entries that depend on `id`.
    func dependents(of id: OutboxEntryID) -> [OutboxEntryID] { dependents[id] ?? [] }

    /// Ids of the entries matching `filter`, in sequence order.
    func ids(matching filter: OutboxFilter) -> [OutboxEntryID] {
        let type = filter.type.map { strings.lookup($0) ?? UInt32.max }
        let scope = filter.scope.map { strings.lookup($0) ?? UInt32.max }
        var matched = entries.values.filter { entry in
            (filter.statuses?.contains(entry.status) ?? true) && (type.map { entry.type == $0 } ?? true)
                && (scope.map { entry.scope == $0 } ?? true)
        }
        matched.sort { $0.sequence < $1.sequence }
        if let limit = filter.limit { matched = Array(matched.prefix(max(0, limit))) }
        return matched.map(\.id)
    }

    /// The entries that may be sent at `now`, best first, at most `limit`.
    /// They stay candidates until an attempt begins.
    mutating func due(now: Int64, limit: Int) -> [OutboxEntryID] {
        let picked = pick(now: now, limit: limit) { _ in true }
        for candidate in picked.accepted { ready.insert(candidate) }
        return picked.accepted.map(\.id)
    }

    /// Up to `limit` due entries whose type `accepts`, best first, each put
    /// in flight with its attempt counted and a lease until `leaseUntil`:
    /// ``due(now:limit:)`` and ``beginAttempt(_:now:leaseUntil:)`` in one
    /// step, so a drain reads each body once and writes all the attempt
    /// marks in one batch. Due entries of other types stay where they are
    /// and are returned as `unaccepted` (id, type).
    mutating func claim(
        now: Int64, limit: Int, leaseUntil: Int64, accepts: (String) -> Bool
    ) -> (claimed: [OutboxEntryID], unaccepted: [(OutboxEntryID, String)], changes: [StoreChange]) {
        var verdicts: [UInt32: Bool] = [:]
        let names = strings  // a copy: `pick` mutates self while this runs
        let picked = pick(now: now, limit: limit) { type in
            if let verdict = verdicts[type] { return verdict }
            let verdict = accepts(names.name(type) ?? "")
            verdicts[type] = verdict
            return verdict
        }
        var changes: [StoreChange] = []
        changes.reserveCapacity(picked.accepted.count)
        for candidate in picked.accepted {
            // `pick` checked status, scope head, time and dependencies.
            guard var entry = entries[candidate.id] else { continue }
            setStatus(&entry, .inFlight)
            entry.attempts &+= 1
            entry.when = leaseUntil
            commit(entry)
            changes.append(.state(candidate.id))
        }
        let unaccepted = picked.rejected.map { ($0.id, strings.name(entries[$0.id]?.type ?? 0) ?? "") }
        for candidate in picked.rejected { ready.insert(candidate) }
        return (picked.accepted.map(\.id), unaccepted, changes)
    }

    /// Pops send candidates, best first, until `limit` are accepted: moves
    /// entries whose time has come from `waiting` to `ready`, drops stale
    /// heap items, sends early ones back to `waiting` and parks entries
    /// whose dependency has not succeeded. Accepted and rejected candidates
    /// are out of `ready` when this returns; the caller puts back the ones
    /// that stay candidates.
    private mutating func pick(
        now: Int64, limit: Int, accepts: (UInt32) -> Bool
    ) -> (accepted: [Candidate], rejected: [Candidate]) {
        while let top = waiting.min, top.when <= now {
            waiting.removeMin()
            guard let entry = entries[top.id], entry.version == top.version else { continue }
            ready.insert(Candidate(sequence: entry.sequence, id: entry.id, version: entry.version, priority: entry.priority))
        }
        var accepted: [Candidate] = []
        var rejected: [Candidate] = []
        var seen: Set<OutboxEntryID> = []
        while accepted.count < limit, let candidate = ready.popMin() {
            guard let entry = entries[candidate.id], entry.version == candidate.version, entry.status.isSendable,
                isHead(entry), !seen.contains(entry.id)
            else { continue }
            if entry.when > now {
                waiting.insert(Timed(when: entry.when, sequence: entry.sequence, id: entry.id, version: entry.version))
                continue
            }
            if let parent = unmetDependency(entry) {
                // Parked until the parent succeeds (or is quarantined, which
                // quarantines this entry too).
                blocked[parent, default: []].append(entry.id)
                continue
            }
            seen.insert(entry.id)
            if !accepts(entry.type) {
                rejected.append(candidate)
            } else {
                accepted.append(candidate)
            }
        }
        return (accepted, rejected)
    }

    /// When the oldest entry not yet delivered nor set aside (pending,
    /// failed or in flight) was created, in ms since 1970.
    mutating func oldestUnsentCreation() -> Int64? {
        while let top = unsentByCreation.min {
            if let entry = entries[top.id], entry.sequence == top.sequence, entry.status.holdsScope { return top.createdAt }
            unsentByCreation.removeMin()
        }
        return nil
    }

    private mutating func noteUnsent(_ entry: EntryMetadata) {
        unsentByCreation.insert(Aged(createdAt: entry.createdAt, sequence: entry.sequence, id: entry.id))
    }

    /// When the next entry becomes due, if any is waiting for its time.
    mutating func nextDueTime() -> Int64? {
        while let top = waiting.min {
            if let entry = entries[top.id], entry.version == top.version { return top.when }
            waiting.removeMin()
        }
        return nil
    }

    /// Whether any candidate is ready now (without popping it).
    var hasReadyCandidates: Bool { !ready.isEmpty }

    // MARK: - Enqueue

    enum EnqueueOutcome {
        case enqueued
        case coalesced(replaced: OutboxEntryID)
        /// The id, or the app-supplied key, is already held by this entry.
        case duplicate(OutboxEntryID, OutboxStatus)
    }

    /// Admits a new entry whose fields ``Admission`` accepted. Nothing
    /// changes if it throws.
    ///
    /// `spooled`: the entry was already acknowledged by another process
    /// (a spool, Docs/OUTBOX.md): a dependency this queue does not know
    /// cannot be refused back to its writer, so the entry is recorded and
    /// quarantined at once instead, with the reason.
    mutating func enqueue(
        _ request: OutboxEnqueueRequest, storedBytes: Int, now: Int64, spooled: Bool = false
    ) throws(OutboxError) -> (EnqueueOutcome, [StoreChange]) {
        if let existing = duplicate(of: request.id) { return (existing, []) }
        if let key = request.idempotencyKey, let holder = keyHolders[key], let existing = duplicate(of: holder) {
            return (existing, [])
        }
        if !spooled { try checkDependencies(request) }

        // Coalescing: replace a pending entry with the same key that nothing depends on.
        var replaced: EntryMetadata?
        if let key = request.coalescingKey, let existingKey = strings.lookup(key), let holder = holder(of: existingKey),
            let candidate = entries[holder], candidate.status == .pending, candidate.attempts == 0,
            dependents[holder, default: []].isEmpty, !request.dependencies.contains(holder)
        {
            // Only a never-attempted entry may be replaced: one that was sent
            // (and came back pending after a crash) may have reached the
            // server, and its replacement carries a new idempotency key.
            replaced = candidate
        }

        // Limits, with eviction of the oldest dead entries if allowed. This
        // is the last check that can fail: from here on, nothing throws.
        let evicted = try evictionsNeeded(adding: storedBytes, replacing: replaced)

        // Intern before removing anything, so a shared scope keeps its id.
        let scope = strings.retain(request.scope)
        let type = strings.retain(request.type)
        let coalescingKey = strings.retain(request.coalescingKey)

        var changes: [StoreChange] = []
        for id in evicted {
            changes += removeEntry(id, cascadeReason: "dependencyFailed: \(id) was evicted (outbox full)")
            changes.append(.remove(id))
        }
        // A replacement keeps the replaced entry's place in the order — in its
        // scope, and among equal priorities — unless it moves to another
        // scope, or that place is ahead of one of its dependencies: then it
        // queues behind what is there. (Ahead of a dependency it would wait
        // for it while, as the scope's head, holding it back: a deadlock.)
        let keepsPlace = replaced.map { $0.scope == scope && isBehindDependencies($0.sequence, of: request) } ?? false
        let newQueue = queue(ofScope: scope, hasDependencies: !request.dependencies.isEmpty)
        let takesReplacedSlot = keepsPlace && newQueue != nil && replaced.flatMap { queue(of: $0) } == newQueue
        if let replaced {
            changes += removeEntry(replaced.id, cascadeReason: nil, keepScopeSlotFor: takesReplacedSlot ? request.id : nil)
            changes.append(.remove(replaced.id))
        }
        let sequence = keepsPlace ? replaced!.sequence : nextSequence
        if !keepsPlace { nextSequence += 1 }
        var entry = EntryMetadata(
            id: request.id, sequence: sequence, status: .pending,
            priority: Int16(clamping: request.priority), attempts: 0,
            maxAttempts: UInt16(clamping: request.maxAttempts ?? configuration.defaultMaximumAttempts),
            scope: scope, type: type, coalescing: coalescingKey, when: EntryMetadata.immediately,
            createdAt: request.createdAt.milliseconds, storedBytes: UInt32(clamping: storedBytes),
            dependencies: request.dependencies.isEmpty ? nil : request.dependencies)
        entry.version = 1
        entries[entry.id] = entry
        adjust(.pending, count: 1, bytes: storedBytes)
        if queue(of: entry) != nil && !takesReplacedSlot { insertIntoScope(entry) }
        noteUnsent(entry)
        if entry.coalescing != 0 {
            keyed[entry.coalescing, default: []].append(entry.id)
            pristine.insert(entry.id)
        }
        if let key = request.idempotencyKey { holdKey(key, for: entry.id) }
        for parent in request.dependencies where entries[parent] != nil {
            dependents[parent, default: []].append(entry.id)
        }
        consider(entry.id)
        changes.append(.newEntry(entry.id))
        if let reason = failedDependency(of: request, evicted: evicted) {
            // It could never be sent: quarantined at once, like the
            // dependents of a parent that dies later (and revived with it).
            quarantineAtEnqueue(entry.id, reason: reason)
            changes.append(.state(entry.id))
        }
        if let replaced { return (.coalesced(replaced: replaced.id), changes) }
        return (.enqueued, changes)
    }

    /// Why a new entry can never be sent because of a dependency, if so:
    /// a parent that is dead, or one that was evicted to make room for it.
    private func failedDependency(of request: OutboxEnqueueRequest, evicted: [OutboxEntryID]) -> String? {
        for parent in request.dependencies where completions[parent] == nil {
            guard let metadata = entries[parent] else {
                // Only a spooled entry gets here with a parent never seen (see enqueue).
                return evicted.contains(parent)
                    ? "dependencyFailed: \(parent) was evicted (outbox full)"
                    : "dependencyFailed: \(parent) is unknown to this queue (spooled by another process)"
            }
            if metadata.status == .quarantined { return "dependencyFailed: \(parent) is dead" }
        }
        return nil
    }

    private mutating func quarantineAtEnqueue(_ id: OutboxEntryID, reason: String) {
        guard var entry = entries[id] else { return }
        leaveScope(entry)
        setStatus(&entry, .quarantined)
        failures[id] = FailureInfo(message: reason, httpStatus: nil)
        commit(entry)
    }

    /// The existing entry (or delivered one) with this id, as a duplicate.
    private func duplicate(of id: OutboxEntryID) -> EnqueueOutcome? {
        if let existing = entries[id] { return .duplicate(id, existing.status) }
        if completions[id] != nil { return .duplicate(id, .succeeded) }
        return nil
    }

    private func checkDependencies(_ request: OutboxEnqueueRequest) throws(OutboxError) {
        for parent in request.dependencies where entries[parent] == nil && completions[parent] == nil {
            throw OutboxError(.unknownDependency, "depends on \(parent), which this partition does not know", entry: request.id)
        }
    }

    /// Whether the place `sequence` lies behind every dependency of `request`
    /// that is still an entry (an older place would wait for a younger one).
    private func isBehindDependencies(_ sequence: UInt64, of request: OutboxEnqueueRequest) -> Bool {
        request.dependencies.allSatisfy { parent in entries[parent].map { $0.sequence < sequence } ?? true }
    }

    /// Records that the app-supplied `key` belongs to `id`.
    private mutating func holdKey(_ key: String, for id: OutboxEntryID) {
        keyHolders[key] = id
        appKeys[id] = key
    }

    /// Forgets `id`'s app-supplied key, unless its completion still holds it.
    private mutating func releaseKey(of id: OutboxEntryID) {
        guard completions[id]?.idempotencyKey == nil, let key = appKeys.removeValue(forKey: id) else { return }
        if keyHolders[key] == id { keyHolders[key] = nil }
    }

    /// The dead entries to evict so that one more entry of `adding` bytes
    /// fits; throws `full` if it cannot fit.
    private func evictionsNeeded(adding: Int, replacing: EntryMetadata?) throws(OutboxError) -> [OutboxEntryID] {
        var count = entries.count + 1 - (replacing == nil ? 0 : 1)
        var size = totalBytes + adding - Int(replacing?.storedBytes ?? 0)
        func fits() -> Bool {
            (configuration.maximumEntries.map { count <= $0 } ?? true) && (configuration.maximumBytes.map { size <= $0 } ?? true)
        }
        if fits() { return [] }
        var evicted: [OutboxEntryID] = []
        if configuration.fullPolicy == .evictOldestDead {
            let dead = entries.values.filter { $0.status == .quarantined }.sorted { $0.sequence < $1.sequence }
            for entry in dead where !fits() {
                evicted.append(entry.id)
                count -= 1
                size -= Int(entry.storedBytes)
            }
        }
        guard fits() else {
            throw OutboxError(
                .full,
                "the partition holds \(entries.count) entries and \(totalBytes) bytes; limits are "
                    + "\(configuration.maximumEntries.map(String.init) ?? "none") entries and "
                    + "\(configuration.maximumBytes.map(String.init) ?? "none") bytes")
        }
        return evicted
    }

    // MARK: - Attempts and outcomes

    /// Starts an attempt: the entry goes in flight with a lease until
    /// `leaseUntil`, and the attempt is counted.
    mutating func beginAttempt(_ id: OutboxEntryID, now: Int64, leaseUntil: Int64) throws(OutboxError) -> [StoreChange] {
        var entry = try existing(id)
        guard entry.status.isSendable else { throw transitionError(entry, to: .inFlight) }
        guard isHead(entry) else {
            throw OutboxError(.invalidTransition, "an earlier entry of its scope is still unfinished", entry: id)
        }
        if let parent = unmetDependency(entry) {
            throw OutboxError(.invalidTransition, "waiting for dependency \(parent)", entry: id)
        }
        guard entry.when <= now else {
            throw OutboxError(.invalidTransition, "not due until \(Date(milliseconds: entry.when))", entry: id)
        }
        setStatus(&entry, .inFlight)
        entry.attempts &+= 1
        entry.when = leaseUntil
        commit(entry)
        return [.state(id)]
    }

    /// Records delivery: the entry is removed (or kept as `succeeded` for the
    /// audit window) and its completion stored, with the server's id.
    mutating func succeed(_ id: OutboxEntryID, serverID: String?, now: Int64) throws(OutboxError) -> [StoreChange] {
        var entry = try existing(id)
        guard entry.status.canMove(to: .succeeded) else { throw transitionError(entry, to: .succeeded) }
        completions[id] = Completion(serverID: serverID, syncedAt: now, idempotencyKey: appKeys[id])
        failures[id] = nil
        let waitingChildren = blocked.removeValue(forKey: id) ?? []
        var changes: [StoreChange] = []
        if configuration.succeededRetention != nil {
            leaveScope(entry)
            setStatus(&entry, .succeeded)
            entry.when = now
            commit(entry)
            changes.append(.state(id))
        } else {
            _ = removeEntry(id, cascadeReason: nil)
            changes.append(.remove(id))
        }
        changes.append(.completion(id))
        // Children waiting on it may go now.
        for child in waitingChildren { consider(child) }
        dependents[id] = nil
        return changes
    }

    /// Records a transient failure: retried at `retryAt`, unless the entry
    /// has used all its attempts, in which case it is quarantined. An
    /// attempt that is not `counted` is given back (it never quarantines);
    /// `answeredAt` is when the server answered it, if it did.
    /// `outcomeUnknownAt` says the attempt's outcome is unknown (sent, answer
    /// lost) and when it was made; the earliest such time is kept.
    mutating func fail(
        _ id: OutboxEntryID, error: String, httpStatus: Int?, retryAt: Int64, counted: Bool = true,
        answeredAt: Int64? = nil, outcomeUnknownAt: Int64? = nil
    ) throws(OutboxError) -> (OutboxStatus, OutboxCascade, [StoreChange]) {
        var entry = try existing(id)
        guard entry.status.canMove(to: .waitingToRetry) else { throw transitionError(entry, to: .waitingToRetry) }
        let firstAnswer = failures[id]?.firstAnsweredAt ?? answeredAt
        let unknownSince = [failures[id]?.outcomeUnknownSince, outcomeUnknownAt].compactMap { $0 }.min()
        if !counted {
            entry.attempts = entry.attempts > 0 ? entry.attempts - 1 : 0
        } else if entry.attempts >= entry.maxAttempts {
            let (cascade, changes) = try quarantine(
                id, reason: "gave up after \(entry.attempts) attempt(s): \(error)", httpStatus: httpStatus)
            return (.quarantined, cascade, changes)
        }
        setStatus(&entry, .waitingToRetry)
        entry.when = retryAt
        failures[id] = FailureInfo(
            message: Self.kept(error), httpStatus: httpStatus, firstAnsweredAt: firstAnswer, outcomeUnknownSince: unknownSince)
        commit(entry)
        consider(id)
        return (.waitingToRetry, OutboxCascade(), [.state(id)])
    }

    /// Puts in-flight entries whose lease ended at or before `now` back in
    /// the queue: pending, due at once, the attempt counted. Returns them.
    mutating func reclaimExpiredLeases(now: Int64) -> [OutboxEntryID] {
        let expired = entries.values.filter { $0.status == .inFlight && $0.when <= now }.map(\.id)
        for id in expired {
            guard var entry = entries[id] else { continue }
            let leaseEnd = entry.when
            setStatus(&entry, .pending)
            entry.when = now
            failures[id] = FailureInfo(
                message: "the attempt's lease expired without an outcome", httpStatus: nil,
                firstAnsweredAt: failures[id]?.firstAnsweredAt,
                outcomeUnknownSince: min(failures[id]?.outcomeUnknownSince ?? leaseEnd, leaseEnd))
            commit(entry)
            consider(id)
        }
        return expired
    }

    /// Notes that an attempt of `id` made at `since` (ms) has an unknown
    /// outcome, keeping the earliest such time.
    private mutating func markOutcomeUnknown(_ id: OutboxEntryID, since: Int64) {
        var failure = failures[id] ?? FailureInfo()
        failure.outcomeUnknownSince = min(failure.outcomeUnknownSince ?? since, since)
        failures[id] = failure
    }

    /// Quarantines an entry (`dead`) and, transitively, every entry that
    /// depends on it (reason `dependencyFailed`).
    mutating func quarantine(
        _ id: OutboxEntryID, reason: String, httpStatus: Int?
    ) throws(OutboxError) -> (OutboxCascade, [StoreChange]) {
        var entry = try existing(id)
        guard entry.status.canMove(to: .quarantined) else { throw transitionError(entry, to: .quarantined) }
        leaveScope(entry)
        setStatus(&entry, .quarantined)
        failures[id] = FailureInfo(message: Self.kept(reason), httpStatus: httpStatus)
        commit(entry)
        var changes: [StoreChange] = [.state(id)]
        let cascade = cascadeDeath(from: id, reason: "dependencyFailed: \(id) is dead", changes: &changes)
        return (OutboxCascade(dependents: cascade), changes)
    }

    /// Records a conflict left for a person to resolve.
    mutating func conflict(_ id: OutboxEntryID, reason: String, httpStatus: Int?) throws(OutboxError) -> [StoreChange] {
        var entry = try existing(id)
        guard entry.status.canMove(to: .conflict) else { throw transitionError(entry, to: .conflict) }
        leaveScope(entry)
        setStatus(&entry, .conflict)
        failures[id] = FailureInfo(message: Self.kept(reason), httpStatus: httpStatus)
        commit(entry)
        return [.state(id)]
    }

    /// Puts a `dead` or `conflict` entry back to `pending` with a fresh
    /// attempt budget; its dependents quarantined because of it come back too.
    mutating func retry(_ id: OutboxEntryID, now: Int64) throws(OutboxError) -> (OutboxCascade, [StoreChange]) {
        let entry = try existing(id)
        guard entry.status == .quarantined || entry.status == .conflict else { throw transitionError(entry, to: .pending) }
        // Brought back, it would wait forever for a parent that cannot succeed.
        for parent in entry.dependencies ?? [] where completions[parent] == nil {
            guard let metadata = entries[parent] else {
                throw OutboxError(
                    .invalidTransition, "its dependency \(parent) is gone without having been delivered; discard it instead",
                    entry: id)
            }
            if metadata.status == .quarantined {
                throw OutboxError(
                    .invalidTransition, "its dependency \(parent) is dead: retry that one, which brings this one back", entry: id)
            }
            if metadata.sequence > entry.sequence {
                // It depended on an earlier entry with that id, discarded
                // since: waiting for a younger one could deadlock its scope.
                throw OutboxError(
                    .invalidTransition,
                    "its dependency \(parent) was discarded and enqueued again after it; discard this one and enqueue it again",
                    entry: id)
            }
        }
        var changes: [StoreChange] = []
        revive(id, now: now, changes: &changes)
        var revived: [OutboxEntryID] = []
        var queue = [id]
        while let parent = queue.popLast() {
            for child in dependents[parent] ?? [] {
                guard let dependent = entries[child], dependent.status == .quarantined,
                    failures[child]?.message?.hasPrefix("dependencyFailed: \(parent)") == true
                else { continue }
                revive(child, now: now, changes: &changes)
                revived.append(child)
                queue.append(child)
            }
        }
        return (OutboxCascade(dependents: revived), changes)
    }

    /// Removes an entry that is not in flight; its dependents are quarantined.
    mutating func discard(_ id: OutboxEntryID) throws(OutboxError) -> (OutboxCascade, [StoreChange]) {
        let entry = try existing(id)
        guard entry.status != .inFlight else {
            throw OutboxError(.invalidTransition, "cannot discard an entry while it is being sent", entry: id)
        }
        var changes: [StoreChange] = []
        let cascade = removeEntry(id, cascadeReason: "dependencyFailed: \(id) was discarded", collecting: &changes)
        changes.insert(.remove(id), at: 0)
        return (OutboxCascade(dependents: cascade), changes)
    }

    /// Removes every entry and completion.
    mutating func clear() -> [StoreChange] {
        let changes = entries.keys.map { StoreChange.remove($0) } + completions.keys.map { StoreChange.removeCompletion($0) }
        for id in Array(entries.keys) { _ = removeEntry(id, cascadeReason: nil) }
        completions.removeAll()
        keyHolders.removeAll()
        appKeys.removeAll()
        failures.removeAll()
        blocked.removeAll()
        dependents.removeAll()
        return changes
    }

    /// Drops succeeded entries past the audit window, and completions past
    /// the mapping retention that no entry depends on.
    mutating func prune(now: Int64) -> [StoreChange] {
        var changes: [StoreChange] = []
        if let retention = configuration.succeededRetention {
            for entry in entries.values where entry.status == .succeeded && entry.when + retention.milliseconds <= now {
                _ = removeEntry(entry.id, cascadeReason: nil)
                changes.append(.remove(entry.id))
            }
        }
        let referenced = Set(entries.values.flatMap { $0.dependencies ?? [] })
        let cutoff = now - configuration.mappingRetention.milliseconds
        for (id, completion) in completions where completion.syncedAt <= cutoff && !referenced.contains(id) && entries[id] == nil {
            completions[id] = nil
            releaseKey(of: id)
            changes.append(.removeCompletion(id))
        }
        return changes
    }

    // MARK: - Internals

    private func existing(_ id: OutboxEntryID) throws(OutboxError) -> EntryMetadata {
        guard let entry = entries[id] else { throw OutboxError(.notFound, "no such entry", entry: id) }
        return entry
    }

    /// What is kept of an error message or reason (in memory and on disk alike).
    static func kept(_ message: String) -> String { message.count > 2048 ? String(message.prefix(2048)) : message }

    private func transitionError(_ entry: EntryMetadata, to next: OutboxStatus) -> OutboxError {
        OutboxError(.invalidTransition, "cannot move from \(entry.status) to \(next)", entry: entry.id)
    }

    private func isHead(_ entry: EntryMetadata) -> Bool {
        guard let queue = queue(of: entry) else { return true }
        return scopes[queue]?.first == entry.id
    }

    /// The send queue an entry waits in: its scope's, or — for an entry
    /// without a scope and without dependencies — the partition's one queue
    /// of unscoped entries when they go in order
    /// (``OutboxStoreConfiguration/UnscopedDelivery/inOrder``, the default);
    /// `nil` when it goes on its own. An unscoped entry with dependencies
    /// waits for them instead (the seeds' one exception to FIFO): in the
    /// queue, waiting for a parent that needs a person, it would hold back
    /// every unscoped write behind it.
    private func queue(of entry: EntryMetadata) -> UInt32? {
        queue(ofScope: entry.scope, hasDependencies: !(entry.dependencies ?? []).isEmpty)
    }

    private func queue(ofScope scope: UInt32, hasDependencies: Bool) -> UInt32? {
        if scope != 0 { return scope }
        return configuration.unscopedDelivery == .inOrder && !hasDependencies ? Self.unscopedQueue : nil
    }

    /// The key of the unscoped entries' queue: never an interned scope's id
    /// (those count up from 1).
    static let unscopedQueue = UInt32.max

    /// The first dependency that has not succeeded yet, if any.
    private func unmetDependency(_ entry: EntryMetadata) -> OutboxEntryID? {
        for parent in entry.dependencies ?? [] where completions[parent] == nil { return parent }
        return nil
    }

    private mutating func adjust(_ status: OutboxStatus, count: Int, bytes size: Int) {
        counts[status, default: 0] += count
        bytes[status, default: 0] += count * size
        totalBytes += count * size
    }

    mutating func setStatus(_ entry: inout EntryMetadata, _ status: OutboxStatus) {
        adjust(entry.status, count: -1, bytes: Int(entry.storedBytes))
        adjust(status, count: 1, bytes: Int(entry.storedBytes))
        // Any status change ends an entry's hold on its coalescing key for
        // good; delivered, it is no longer the key's newest value.
        if status != entry.status { pristine.remove(entry.id) }
        if status == .succeeded { forgetKey(of: entry) }
        // A dead entry is never due: its time says when it died, for the
        // retention of dead entries (``removeDead(diedBefore:)``).
        if status == .quarantined && entry.status != .quarantined { entry.when = Date().milliseconds }
        entry.status = status
    }

    /// The entry a coalescing enqueue with `key` may replace: the key's
    /// newest live entry, if its status never changed.
    func holder(of key: UInt32) -> OutboxEntryID? {
        guard let newest = keyed[key]?.last, pristine.contains(newest) else { return nil }
        return newest
    }

    private mutating func forgetKey(of entry: EntryMetadata) {
        guard entry.coalescing != 0, let at = keyed[entry.coalescing]?.lastIndex(of: entry.id) else { return }
        keyed[entry.coalescing]!.remove(at: at)
        if keyed[entry.coalescing]!.isEmpty { keyed[entry.coalescing] = nil }
    }

    mutating func commit(_ entry: EntryMetadata) {
        var entry = entry
        entry.version &+= 1
        entries[entry.id] = entry
    }

    /// Makes `id` a send candidate if it is sendable and first in its scope.
    mutating func consider(_ id: OutboxEntryID) {
        guard let entry = entries[id], entry.status.isSendable, isHead(entry) else { return }
        waiting.insert(Timed(when: entry.when, sequence: entry.sequence, id: id, version: entry.version))
    }

    /// Puts `entry` in its scope's order by sequence — but never ahead of a
    /// head that has been attempted (in flight, failed, or left pending by a
    /// crash with its attempt counted): that one may have reached the
    /// server, and it keeps the lead until it leaves the scope.
    private mutating func insertIntoScope(_ entry: EntryMetadata) {
        // Mutate in place: copying the queue out and back would copy the
        // whole deque on every enqueue (quadratic for a busy scope).
        guard let queue = queue(of: entry) else { return }
        if let last = scopes[queue]?.last, let lastEntry = entries[last], lastEntry.sequence > entry.sequence {
            scopes[queue]!.insert(entry.id, at: scopePosition(for: entry, in: queue))
        } else {
            scopes[queue, default: []].append(entry.id)
        }
    }

    /// Where ``insertIntoScope(_:)`` puts `entry` (a read, so the deque is
    /// not copied by the insert that follows).
    private func scopePosition(for entry: EntryMetadata, in key: UInt32) -> Int {
        guard let queue = scopes[key] else { return 0 }
        let headWasAttempted = queue.first.flatMap { entries[$0] }.map { $0.attempts > 0 } ?? false
        let start = headWasAttempted ? 1 : 0
        return queue[start...].firstIndex { (entries[$0]?.sequence ?? 0) > entry.sequence } ?? queue.count
    }

    /// Takes an entry out of its scope's order; the next one becomes head.
    private mutating func leaveScope(_ entry: EntryMetadata) {
        // In place, and from the front in the common case (the head leaves):
        // a copy of the deque here would make draining a busy scope quadratic.
        guard let queue = queue(of: entry), let at = scopes[queue]?.firstIndex(of: entry.id) else { return }
        if at == 0 { scopes[queue]!.removeFirst() } else { scopes[queue]!.remove(at: at) }
        if let head = scopes[queue]!.first {
            if at == 0 { consider(head) }
        } else {
            scopes[queue] = nil
        }
    }

    private mutating func revive(_ id: OutboxEntryID, now: Int64, changes: inout [StoreChange]) {
        guard var entry = entries[id] else { return }
        setStatus(&entry, .pending)
        entry.attempts = 0
        entry.when = now
        failures[id] = nil
        commit(entry)
        insertIntoScope(entries[id]!)
        noteUnsent(entries[id]!)
        consider(id)
        changes.append(.state(id))
    }

    /// Quarantines every live entry that depends, directly or not, on `root`.
    private mutating func cascadeDeath(
        from root: OutboxEntryID, reason: String, changes: inout [StoreChange]
    ) -> [OutboxEntryID] {
        var affected: [OutboxEntryID] = []
        var queue = [(root, reason)]
        while let (parent, why) = queue.popLast() {
            for child in dependents[parent] ?? [] {
                guard var entry = entries[child], entry.status.canMove(to: .quarantined), entry.status != .inFlight else { continue }
                leaveScope(entry)
                setStatus(&entry, .quarantined)
                failures[child] = FailureInfo(message: why, httpStatus: nil)
                commit(entry)
                changes.append(.state(child))
                affected.append(child)
                queue.append((child, "dependencyFailed: \(child) is dead"))
            }
        }
        blocked[root] = nil
        return affected
    }

    private mutating func removeEntry(
        _ id: OutboxEntryID, cascadeReason: String?, keepScopeSlotFor replacement: OutboxEntryID? = nil
    ) -> [StoreChange] {
        var changes: [StoreChange] = []
        _ = removeEntry(id, cascadeReason: cascadeReason, keepScopeSlotFor: replacement, collecting: &changes)
        return changes
    }

    /// Forgets an entry; with `cascadeReason`, quarantines its dependents.
    /// With `replacement`, the replacement takes its place in its scope.
    @discardableResult
    mutating func removeEntry(
        _ id: OutboxEntryID, cascadeReason: String?, keepScopeSlotFor replacement: OutboxEntryID? = nil,
        collecting changes: inout [StoreChange]
    ) -> [OutboxEntryID] {
        guard let entry = entries[id] else { return [] }
        var cascade: [OutboxEntryID] = []
        if let cascadeReason { cascade = cascadeDeath(from: id, reason: cascadeReason, changes: &changes) }
        if let replacement, let queue = queue(of: entry), let at = scopes[queue]?.firstIndex(of: id) {
            scopes[queue]![at] = replacement
        } else {
            leaveScope(entry)
        }
        forgetKey(of: entry)
        pristine.remove(id)
        releaseKey(of: id)
        for parent in entry.dependencies ?? [] {
            dependents[parent]?.removeAll { $0 == id }
            if dependents[parent]?.isEmpty == true { dependents[parent] = nil }
        }
        adjust(entry.status, count: -1, bytes: Int(entry.storedBytes))
        strings.release(entry.scope)
        strings.release(entry.type)
        strings.release(entry.coalescing)
        entries[id] = nil
        failures[id] = nil
        blocked[id] = nil
        if replacement == nil { dependents[id] = nil }
        return cascade
    }
}
