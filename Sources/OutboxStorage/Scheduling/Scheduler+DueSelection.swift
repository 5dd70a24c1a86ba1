import HeapModule
import OutboxModel

/// Due-time and claim selection: which entries may go now, best first.
/// Send candidates wait in two heaps — `waiting` by the time they may go,
/// `ready` best first once that time has come — and stale heap items (an
/// entry changed since: its version moved on) are dropped when they reach
/// the top. A third heap keeps unsent entries by creation time for the
/// summary's oldest pending age.
extension Scheduler {
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

    /// Makes `id` a send candidate if it is sendable and first in its scope.
    mutating func consider(_ id: OutboxEntryID) {
        guard let entry = entries[id], entry.status.isSendable, isHead(entry) else { return }
        waiting.insert(Timed(when: entry.when, sequence: entry.sequence, id: id, version: entry.version))
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
    ) -> (claimed: [OutboxEntryID], unaccepted: [(OutboxEntryID, String)], changes: StoreChanges) {
        var verdicts: [UInt32: Bool] = [:]
        let names = strings  // a copy: `pick` mutates self while this runs
        let picked = pick(now: now, limit: limit) { type in
            if let verdict = verdicts[type] { return verdict }
            let verdict = accepts(names.name(type) ?? "")
            verdicts[type] = verdict
            return verdict
        }
        var changes: StoreChanges = []
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
    /// waiting to retry or in flight) was created, in ms since 1970.
    mutating func oldestUnsentCreation() -> Int64? {
        while let top = unsentByCreation.min {
            if let entry = entries[top.id], entry.sequence == top.sequence, entry.status.holdsScope { return top.createdAt }
            unsentByCreation.removeMin()
        }
        return nil
    }

    mutating func noteUnsent(_ entry: EntryMetadata) {
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
}
