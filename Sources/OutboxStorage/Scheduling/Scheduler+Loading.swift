import HeapModule
import OutboxModel

/// Loading: rebuilding the scheduler from what a store read back (its log,
/// or a checkpoint plus the log written after it), and what a checkpoint keeps.
extension Scheduler {
    // MARK: - Loading

    /// Adds an entry read back from storage.
    ///
    /// - Parameter unchanged: no state change was ever recorded for it since
    ///   its enqueue. Only such an entry may still be replaced by coalescing
    ///   (the same rule as at run time, where any status change ends it).
    ///
    /// - Returns: whether the id was new (a checkpoint lists each entry once).
    @discardableResult
    mutating func load(_ metadata: EntryMetadata, failure: FailureInfo?, unchanged: Bool, appKey: String? = nil) -> Bool {
        let isNew = entries.set(metadata)
        note(LoadedEntry(metadata: metadata, failure: failure, unchanged: unchanged, appKey: appKey))
        return isNew
    }

    /// Everything loading `loaded` changes but the entry table; returns
    /// the entry that held its app key before, if another did.
    @discardableResult
    private mutating func note(_ loaded: LoadedEntry) -> OutboxEntryID? {
        let metadata = loaded.metadata
        var holder: OutboxEntryID?
        if let key = loaded.appKey {
            holder = keyHolders.updateValue(metadata.id, forKey: key)
            appKeys[metadata.id] = key
        }
        if let failure = loaded.failure { failures[metadata.id] = failure }
        if loaded.unchanged && metadata.coalescing != 0 && metadata.status == .pending { pristine.insert(metadata.id) }
        adjust(metadata.status, count: 1, bytes: Int(metadata.storedBytes))
        nextSequence = max(nextSequence, metadata.sequence + 1)
        return holder == metadata.id ? nil : holder
    }

    /// Loads the `count` entries of a checkpoint, `next(0)`, `next(1)`, …
    /// (asked for in that order), into a scheduler that holds none: the
    /// entry table is built at once, not one insertion per entry (see
    /// ``EntryTable/init(loadingUnique:_:)``). Returns what makes the
    /// entries unloadable, if anything (the scheduler is then to be
    /// discarded); an error `next` throws stops the load.
    mutating func loadEntries<Failure: Error>(
        count: Int, _ next: (Int) throws(Failure) -> LoadedEntry
    ) throws(Failure) -> LoadConflict? {
        var conflict: LoadConflict?
        let table = try EntryTable(loadingUnique: count) { index throws(Failure) -> EntryMetadata in
            let loaded = try next(index)
            if let holder = note(loaded), conflict == nil { conflict = .keyHeldTwice(holder, loaded.metadata.id) }
            return loaded.metadata
        }
        guard let table else { return .idRepeated }
        entries = table
        return conflict
    }

    /// One entry of a checkpoint, for ``loadEntries(count:_:)``: what
    /// ``load(_:failure:unchanged:appKey:)`` takes.
    struct LoadedEntry {
        var metadata: EntryMetadata
        var failure: FailureInfo?
        var unchanged: Bool
        var appKey: String?
    }

    /// Why a checkpoint's entries cannot all be loaded.
    enum LoadConflict: Equatable {
        /// Two entries have one id.
        case idRepeated
        /// Two entries hold one app key: the first holder, then the second.
        case keyHeldTwice(OutboxEntryID, OutboxEntryID)
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
    package struct CheckpointContent: Sendable {
        var entries: EntryTable
        var failures: [OutboxEntryID: FailureInfo]
        var completions: [OutboxEntryID: Completion]
        var strings: StringInterner
        /// Entries whose status never changed since their enqueue, among
        /// those with a coalescing key (on disk: no state record).
        var pristine: Set<OutboxEntryID>
        var appKeys: [OutboxEntryID: String]
        package var nextSequence: UInt64
    }

    package var checkpointContent: CheckpointContent {
        CheckpointContent(
            entries: entries, failures: failures, completions: completions, strings: strings, pristine: pristine,
            appKeys: appKeys, nextSequence: nextSequence)
    }

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
    package mutating func finishLoading(now: Int64, sequenceFloor: UInt64) -> StoreChanges {
        nextSequence = max(nextSequence, sequenceFloor)
        let changes = rebuildOrder(now: now)
        rebuildHeaps(now: now)
        return changes
    }

    /// One loaded entry as the order's rebuild needs it, taken in one pass
    /// over the table so the rebuild looks nothing up per entry.
    private struct Placed {
        var id: OutboxEntryID
        var sequence: UInt64
        /// The send queue it holds a place in (``queue(ofScope:hasDependencies:)``),
        /// 0 if none: it goes on its own, or is finished (scope ids count up from 1).
        var queue: UInt32
        /// An attempted head: first in its queue, wherever its sequence falls.
        var leads: Bool
        /// It has a coalescing key or dependencies.
        var linked: Bool

        /// Queue order: an attempted head first (an older entry may have
        /// been retried behind it), then by sequence.
        static func inQueueOrder(_ a: Placed, _ b: Placed) -> Bool {
            a.leads != b.leads ? a.leads : a.sequence < b.sequence
        }
    }

    /// The scope queues, coalescing keys and dependents, in order; entries
    /// a crash left in flight come back pending. Returns their new state.
    ///
    /// At a million entries this is most of a load, so it reads the table
    /// once, keeps what it needs in a flat array, and never calls a method
    /// of `self` from inside the table's iteration (the compiler copies the
    /// whole scheduler for each such call).
    private mutating func rebuildOrder(now: Int64) -> StoreChanges {
        var changes: StoreChanges = []
        let inOrder = configuration.unscopedDelivery == .inOrder
        var placed: [Placed] = []
        var inFlight: [(OutboxEntryID, UInt64)] = []
        placed.reserveCapacity(entries.count)
        entries.forEachPacked { id, entry in
            if entry.status == .inFlight { inFlight.append((id, entry.sequence)) }
            let queue = entry.status.holdsScope
                ? Self.queue(ofScope: entry.scope, hasDependencies: entry.hasDependencies, unscopedInOrder: inOrder) ?? 0 : 0
            let linked = entry.coalescing != 0 || entry.hasDependencies
            guard queue != 0 || linked else { return }
            placed.append(
                Placed(
                    id: id, sequence: entry.sequence, queue: queue,
                    leads: entry.attempts > 0 && entry.status.holdsScope, linked: linked))
        }
        // Loads insert in sequence order, and the sort is linear on input in order.
        placed.sort(by: Placed.inQueueOrder)
        inFlight.sort { $0.1 < $1.1 }
        for (id, _) in inFlight {
            // Cut short by the crash: the request may have been applied.
            var entry = entries[id]!
            markOutcomeUnknown(id, since: entry.when)
            failures[id]?.last = OutboxFailure(.leaseExpired)
            setStatus(&entry, .pending)
            entry.when = now
            entries[id] = entry
            changes.append(.state(id))
        }
        fillQueues(from: placed)
        for item in placed where item.linked { link(entries[item.id]!) }
        for key in keyed.keys { keyed[key]!.sort { entries[$0]!.sequence < entries[$1]!.sequence } }
        return changes
    }

    /// Appends the placed entries to their queues, in `placed`'s order: a
    /// run of entries of the same queue (all of them, when nothing is scoped)
    /// costs one look-up of the queue, not one per entry.
    private mutating func fillQueues(from placed: [Placed]) {
        var run: [OutboxEntryID] = []
        var runQueue: UInt32 = 0
        for item in placed where item.queue != 0 {
            if item.queue != runQueue {
                if !run.isEmpty { scopes[runQueue, default: []].append(contentsOf: run) }
                run.removeAll(keepingCapacity: true)
                runQueue = item.queue
            }
            run.append(item.id)
        }
        if !run.isEmpty { scopes[runQueue, default: []].append(contentsOf: run) }
    }

    /// Lists a loaded entry under its coalescing key and under the live
    /// parents it depends on.
    private mutating func link(_ entry: EntryMetadata) {
        if entry.coalescing != 0 && entry.status != .succeeded { keyed[entry.coalescing, default: []].append(entry.id) }
        // Only younger entries depend on a live one (as at run time): an
        // older entry naming the same id depended on an earlier entry with
        // that id, discarded since.
        for parent in entry.dependencies ?? [] where (entries[parent]?.sequence ?? .max) < entry.sequence {
            dependents[parent, default: []].append(entry.id)
        }
    }

    /// Every heap built in one pass: due candidates straight into `ready`,
    /// the others into `waiting`, every unsent entry by creation time. An
    /// entry in a queue is a candidate only as its queue's head, so heads are
    /// taken from the queues rather than looked up per entry.
    private mutating func rebuildHeaps(now: Int64) {
        var due: [Candidate] = []
        var later: [Timed] = []
        var unsent: [Aged] = []
        func addCandidate(_ id: OutboxEntryID, _ entry: PackedEntry) {
            guard entry.status.isSendable else { return }
            if entry.when <= now {
                due.append(Candidate(sequence: entry.sequence, id: id, version: entry.version, priority: entry.priority))
            } else {
                later.append(Timed(when: entry.when, sequence: entry.sequence, id: id, version: entry.version))
            }
        }
        let inOrder = configuration.unscopedDelivery == .inOrder
        unsent.reserveCapacity(entries.count)
        entries.forEachPacked { id, entry in
            if entry.status.holdsScope {
                unsent.append(Aged(createdAt: entry.createdAt, sequence: entry.sequence, id: id))
            }
            let inQueue = Self.queue(ofScope: entry.scope, hasDependencies: entry.hasDependencies, unscopedInOrder: inOrder) != nil
            if !inQueue { addCandidate(id, entry) }
        }
        for queue in scopes.values {
            if let head = queue.first, let entry = entries[head] { addCandidate(head, PackedEntry(entry)) }
        }
        ready = Heap(due)
        waiting = Heap(later)
        unsentByCreation = Heap(unsent)
    }

    /// Interns a string for an entry being loaded.
    mutating func intern(_ name: String?) -> UInt32 { strings.retain(name) }
}
