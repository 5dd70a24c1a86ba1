/// The dependency graph: entries that wait for other entries (`local:`
/// references) to be delivered, parked until they are, and quarantined
/// with them (`dependencyFailed`) when they cannot be.
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
    /// a parent that is dead, or one that was evicted to make room for it.
    func failedDependency(of request: OutboxEnqueueRequest, evicted: [OutboxEntryID]) -> String? {
        for parent in request.dependencies where completions[parent] == nil {
            guard let metadata = entries[parent] else {
                // Only a spooled entry gets here with a parent never seen (see enqueue).
                return evicted.contains(parent)
                    ? "dependencyFailed: \(parent) was evicted (outbox full)"
                    : "dependencyFailed: \(parent) is unknown to this queue (spooled by another process)"
            }
            if metadata.status == .dead { return "dependencyFailed: \(parent) is dead" }
        }
        return nil
    }

    /// Quarantines every live entry that depends, directly or not, on `root`.
    mutating func cascadeDeath(
        from root: OutboxEntryID, reason: String, changes: inout [StoreChange]
    ) -> [OutboxEntryID] {
        var affected: [OutboxEntryID] = []
        var queue = [(root, reason)]
        while let (parent, why) = queue.popLast() {
            for child in dependents[parent] ?? [] {
                guard var entry = entries[child], entry.status.canMove(to: .dead), entry.status != .inFlight else { continue }
                leaveScope(entry)
                setStatus(&entry, .dead)
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
}
