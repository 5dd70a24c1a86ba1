import OutboxModel
/// Admission of a new entry against the partition's state: duplicates,
/// dependencies, coalescing, limits and eviction (the checks that need only
/// the request's own values are in ``Admission``).
extension Scheduler {
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
    /// quarantined at once instead, with the dependency failure as its cause.
    mutating func enqueue(
        _ request: OutboxEnqueueRequest, storedBytes: Int, now: Int64, spooled: Bool = false
    ) throws(OutboxError) -> (EnqueueOutcome, StoreChanges) {
        if let existing = duplicate(of: request.id) { return (existing, []) }
        if let key = request.idempotencyKey, let holder = keyHolders[key], let existing = duplicate(of: holder) {
            return (existing, [])
        }
        if !spooled { try checkDependencies(request) }

        let replaced = replaceable(by: request)

        // Limits, with eviction of the oldest quarantined entries if allowed. This
        // is the last check that can fail: from here on, nothing throws.
        let evicted = try evictionsNeeded(adding: storedBytes, replacing: replaced)

        // Intern before removing anything, so a shared scope keeps its id.
        let scope = strings.retain(request.scope)
        let type = strings.retain(request.type)
        let coalescingKey = strings.retain(request.coalescingKey)

        var changes: StoreChanges = []
        for id in evicted {
            changes += removeEntry(id, cascade: .evicted(id))
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
            changes += removeEntry(replaced.id, cascade: nil, keepScopeSlotFor: takesReplacedSlot ? request.id : nil)
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
        install(entry, request: request, storedBytes: storedBytes, takesReplacedSlot: takesReplacedSlot)
        changes.append(.newEntry(entry.id))
        if let cause = failedDependency(of: request, evicted: evicted) {
            // It could never be sent: quarantined at once, like the
            // dependents of a parent that dies later (and revived with it).
            quarantineAtEnqueue(entry.id, cause: cause)
            changes.append(.state(entry.id))
        }
        if let replaced { return (.coalesced(replaced: replaced.id), changes) }
        return (.enqueued, changes)
    }

    /// Coalescing: the pending entry with the request's key that a
    /// coalescing enqueue replaces, if nothing depends on it.
    private func replaceable(by request: OutboxEnqueueRequest) -> EntryMetadata? {
        guard let key = request.coalescingKey, let existingKey = strings.lookup(key), let holder = holder(of: existingKey),
            let candidate = entries[holder], candidate.status == .pending, candidate.attempts == 0,
            dependents[holder, default: []].isEmpty, !request.dependencies.contains(holder)
        else { return nil }
        // Only a never-attempted entry may be replaced: one that was sent
        // (and came back pending after a crash) may have reached the
        // server, and its replacement carries a new idempotency key.
        return candidate
    }

    /// Records a new entry in every structure: the table, the counts, its
    /// send queue (unless it took the replaced entry's slot there), the
    /// unsent heap, its coalescing and app keys, its parents' dependents,
    /// and the send candidates.
    private mutating func install(
        _ entry: EntryMetadata, request: OutboxEnqueueRequest, storedBytes: Int, takesReplacedSlot: Bool
    ) {
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
    }

    private mutating func quarantineAtEnqueue(_ id: OutboxEntryID, cause: OutboxDependencyFailure) {
        guard var entry = entries[id] else { return }
        leaveScope(entry)
        setStatus(&entry, .quarantined)
        failures[id] = FailureInfo(dependency: cause)
        commit(entry)
    }

    /// The existing entry (or delivered one) with this id, as a duplicate.
    private func duplicate(of id: OutboxEntryID) -> EnqueueOutcome? {
        if let existing = entries[id] { return .duplicate(id, existing.status) }
        if completions[id] != nil { return .duplicate(id, .succeeded) }
        return nil
    }

    /// The quarantined entries to evict so that one more entry of `adding` bytes
    /// fits; throws `full` if it cannot fit.
    private func evictionsNeeded(adding: Int, replacing: EntryMetadata?) throws(OutboxError) -> [OutboxEntryID] {
        var count = entries.count + 1 - (replacing == nil ? 0 : 1)
        var size = totalBytes + adding - Int(replacing?.storedBytes ?? 0)
        func fits() -> Bool {
            (configuration.maximumEntries.map { count <= $0 } ?? true) && (configuration.maximumBytes.map { size <= $0 } ?? true)
        }
        if fits() { return [] }
        var evicted: [OutboxEntryID] = []
        if configuration.fullPolicy == .evictOldestQuarantined {
            let quarantined = entries.values.filter { $0.status == .quarantined }.sorted { $0.sequence < $1.sequence }
            for entry in quarantined where !fits() {
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
}
