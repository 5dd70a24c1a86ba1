import OutboxModel
/// The dependency graph: entries that wait for other entries (`local:`
/// references) to be delivered, parked until they are, and quarantined
/// with them (cause `dependency`) when they cannot be.
extension Scheduler {
    /// The first dependency that has not succeeded yet, if any.
    func unmetDependency(_ entry: EntryMetadata) -> OutboxEntryID? {
        for parent in entry.dependencies ?? [] where completions[parent] == nil { return parent }
        return nil
    }

    func checkDependencies(_ request: OutboxEnqueueRequest) throws(OutboxError) {
        for parent in request.dependencies where entries[parent] == nil && completions[parent] == nil {
            throw OutboxError(.unknownDependency, "depends on \(parent), which this partition does not know", entry: request.id)
        }
    }

    /// Whether the place `sequence` lies behind every dependency of `request`
    /// that is still an entry (an older place would wait for a younger one).
    func isBehindDependencies(_ sequence: UInt64, of request: OutboxEnqueueRequest) -> Bool {
        request.dependencies.allSatisfy { parent in entries[parent].map { $0.sequence < sequence } ?? true }
    }

    /// Why a new entry can never be sent because of a dependency, if so:
    /// a parent that is quarantined, or one that was evicted to make room for it.
    func failedDependency(of request: OutboxEnqueueRequest, evicted: [OutboxEntryID]) -> OutboxDependencyFailure? {
        for parent in request.dependencies where completions[parent] == nil {
            guard let metadata = entries[parent] else {
                // Only a spooled entry gets here with a parent never seen (see enqueue).
                return evicted.contains(parent) ? .evicted(parent) : .unknownToQueue(parent)
            }
            if metadata.status == .quarantined { return .quarantined(parent) }
        }
        return nil
    }

    /// Quarantines every live entry that depends, directly or not, on
    /// `root`: its children because of `cause` (what happened to `root`),
    /// theirs because their parent is quarantined.
    mutating func cascadeQuarantine(
        from root: OutboxEntryID, cause: OutboxDependencyFailure, changes: inout StoreChanges
    ) -> [OutboxEntryID] {
        var affected: [OutboxEntryID] = []
        var queue = [(root, cause)]
        while let (parent, why) = queue.popLast() {
            for child in dependents[parent] ?? [] {
                guard var entry = entries[child], entry.status.canMove(to: .quarantined), entry.status != .inFlight else { continue }
                leaveScope(entry)
                setStatus(&entry, .quarantined)
                failures[child] = FailureInfo(dependency: why)
                commit(entry)
                changes.append(.state(child))
                affected.append(child)
                queue.append((child, .quarantined(child)))
            }
        }
        blocked[root] = nil
        return affected
    }

    /// The cascade of dependents `quarantined` just now, with the cause each records.
    func quarantineCascade(_ quarantined: [OutboxEntryID]) -> OutboxCascade {
        var causes: [OutboxEntryID: OutboxDependencyFailure] = [:]
        for id in quarantined { causes[id] = failures[id]?.dependency }
        return OutboxCascade(dependents: quarantined, causes: causes)
    }

    /// Throws unless every dependency of `entry` can still succeed: brought
    /// back, it would wait forever for a parent that cannot.
    func checkDependenciesCanSucceed(_ entry: EntryMetadata) throws(OutboxError) {
        let id = entry.id
        for parent in entry.dependencies ?? [] where completions[parent] == nil {
            guard let metadata = entries[parent] else {
                throw OutboxError(
                    .invalidTransition, "its dependency \(parent) is gone without having been delivered; discard it instead",
                    entry: id)
            }
            if metadata.status == .quarantined {
                throw OutboxError(
                    .invalidTransition, "its dependency \(parent) is quarantined: retry that one, which brings this one back", entry: id)
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
    }

    /// Revives, transitively, the quarantined dependents of `root` that were
    /// quarantined because of it (their recorded cause names it, never their
    /// message: a handler's reason may read the same). Returns them.
    ///
    /// A dependent with another parent that still cannot succeed stays
    /// quarantined — brought back, it would wait as pending for that parent
    /// forever — and its cause now names that parent, so retrying it is
    /// what brings the dependent back.
    mutating func reviveDependents(
        of root: OutboxEntryID, now: Int64, changes: inout StoreChanges
    ) -> [OutboxEntryID] {
        var revived: [OutboxEntryID] = []
        var queue = [root]
        while let parent = queue.popLast() {
            for child in dependents[parent] ?? [] {
                guard let dependent = entries[child], dependent.status == .quarantined,
                    let cause = failures[child]?.dependency, cause.parent == parent
                else { continue }
                if let blocking = blockingDependency(of: dependent) {
                    failures[child] = FailureInfo(dependency: blocking)
                    changes.append(.state(child))
                    continue
                }
                revive(child, now: now, changes: &changes)
                revived.append(child)
                queue.append(child)
            }
        }
        return revived
    }

    /// A dependency of `entry` that can never succeed now, if any: one
    /// that is quarantined, or gone without having been delivered (an entry
    /// enqueued again under its id after it counts as gone: `entry` must not
    /// wait for a younger one).
    func blockingDependency(of entry: EntryMetadata) -> OutboxDependencyFailure? {
        for parent in entry.dependencies ?? [] where completions[parent] == nil {
            guard let metadata = entries[parent], metadata.sequence < entry.sequence else { return .gone(parent) }
            if metadata.status == .quarantined { return .quarantined(parent) }
        }
        return nil
    }
}
