import OutboxModel
/// Entries leaving the scheduler: discarded by the app, cleared, pruned
/// past their retention, replaced or evicted.
extension Scheduler {
    /// Removes an entry that is not in flight; its dependents are quarantined.
    mutating func discard(_ id: OutboxEntryID) throws(OutboxError) -> (OutboxCascade, StoreChanges) {
        let entry = try existing(id)
        guard entry.status != .inFlight else {
            throw OutboxError(.invalidTransition, "cannot discard an entry while it is being sent", entry: id)
        }
        var changes: StoreChanges = []
        let cascade = removeEntry(id, cascade: .discarded(id), collecting: &changes)
        changes.insert(.remove(id), at: 0)
        return (quarantineCascade(cascade), changes)
    }

    /// Removes every entry and completion.
    mutating func clear() -> StoreChanges {
        let changes = StoreChanges(
            entries.keys.map { StoreChange.remove($0) } + completions.keys.map { StoreChange.removeCompletion($0) })
        for id in Array(entries.keys) { _ = removeEntry(id, cascade: nil) }
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
    mutating func prune(now: Int64) -> StoreChanges {
        var changes: StoreChanges = []
        if let retention = configuration.succeededRetention {
            for entry in entries.values where entry.status == .succeeded && entry.when + retention.milliseconds <= now {
                _ = removeEntry(entry.id, cascade: nil)
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

    mutating func removeEntry(
        _ id: OutboxEntryID, cascade cause: OutboxDependencyFailure?, keepScopeSlotFor replacement: OutboxEntryID? = nil
    ) -> StoreChanges {
        var changes: StoreChanges = []
        _ = removeEntry(id, cascade: cause, keepScopeSlotFor: replacement, collecting: &changes)
        return changes
    }

    /// Forgets an entry; with a `cascade` cause, quarantines its dependents.
    /// With `replacement`, the replacement takes its place in its scope.
    @discardableResult
    mutating func removeEntry(
        _ id: OutboxEntryID, cascade cause: OutboxDependencyFailure?, keepScopeSlotFor replacement: OutboxEntryID? = nil,
        collecting changes: inout StoreChanges
    ) -> [OutboxEntryID] {
        guard let entry = entries[id] else { return [] }
        var cascade: [OutboxEntryID] = []
        if let cause { cascade = cascadeQuarantine(from: id, cause: cause, changes: &changes) }
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
