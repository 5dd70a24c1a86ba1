import OutboxModel
/// Send queues: the per-scope FIFO order (and the partition's one queue of
/// unscoped entries when they go in order). Only a queue's head may be
/// sent; an attempted head keeps the lead until it leaves the queue.
extension Scheduler {
    func isHead(_ entry: EntryMetadata) -> Bool {
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
    func queue(of entry: EntryMetadata) -> UInt32? {
        queue(ofScope: entry.scope, hasDependencies: !(entry.dependencies ?? []).isEmpty)
    }

    func queue(ofScope scope: UInt32, hasDependencies: Bool) -> UInt32? {
        Self.queue(
            ofScope: scope, hasDependencies: hasDependencies, unscopedInOrder: configuration.unscopedDelivery == .inOrder)
    }

    /// ``queue(ofScope:hasDependencies:)`` without `self`, for loops over
    /// the entry table (a method call there copies the whole scheduler).
    static func queue(ofScope scope: UInt32, hasDependencies: Bool, unscopedInOrder: Bool) -> UInt32? {
        if scope != 0 { return scope }
        return unscopedInOrder && !hasDependencies ? unscopedQueue : nil
    }

    /// The key of the unscoped entries' queue: never an interned scope's id
    /// (those count up from 1).
    static let unscopedQueue = UInt32.max

    /// Puts `entry` in its scope's order by sequence — but never ahead of a
    /// head that has been attempted (in flight, waiting to retry, or left pending by a
    /// crash with its attempt counted): that one may have reached the
    /// server, and it keeps the lead until it leaves the scope.
    mutating func insertIntoScope(_ entry: EntryMetadata) {
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
    mutating func leaveScope(_ entry: EntryMetadata) {
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
}
