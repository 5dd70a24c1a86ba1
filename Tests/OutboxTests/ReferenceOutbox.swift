import Foundation
import Outbox

/// The outbox rules of Docs/OUTBOX.md written down as plainly as possible —
/// linear scans over one dictionary, no heaps, no indexes, no interning — to
/// check the real scheduler against. It shares no code with `Outbox`'s
/// scheduler, so a bug there is not a bug here too.
struct ReferenceOutbox {
    struct Entry: Equatable {
        var id: OutboxEntry.ID
        var sequence: Int
        var priority: Int
        var scope: String?
        var parent: OutboxEntry.ID?
        var coalescingKey: String?
        var status: OutboxStatus = .pending
        var attempts = 0
        var maxAttempts: Int
        /// When it may be sent (failed, revived), or `nil`: at once.
        var notBefore: Date?
        /// The parent whose failure quarantined it (what revives it with
        /// that parent: the store's recorded cause).
        var quarantinedWith: OutboxEntry.ID?
        /// Its status never changed since its enqueue.
        var pristine = true
    }

    /// An operation's result, in the words the comparison uses.
    enum Failure: Error, Equatable {
        case notFound, invalidTransition, unknownDependency, invalidArgument
    }

    private(set) var entries: [OutboxEntry.ID: Entry] = [:]
    private(set) var delivered: Set<OutboxEntry.ID> = []
    /// The entry a coalescing key would replace: the newest entry with it
    /// that is neither delivered nor removed, while that one has never left
    /// `pending`. Never an older one: it would put the new value in the
    /// older one's place, ahead of the newer value.
    private func coalescingHolder(_ key: String) -> Entry? {
        let newest = entries.values.filter { $0.coalescingKey == key }.max { $0.sequence < $1.sequence }
        return newest.flatMap { $0.pristine ? $0 : nil }
    }
    private var nextSequence = 1

    // MARK: Order

    /// Pending, failed and in-flight entries keep their place in their scope.
    private func holdsScope(_ entry: Entry) -> Bool {
        entry.status == .pending || entry.status == .waitingToRetry || entry.status == .inFlight
    }

    /// The entry of its scope that may go next (or no scope at all): the
    /// one being sent or already tried, if any — once an attempt has begun,
    /// nothing of its scope may overtake it, not even an older entry brought
    /// back by `retry` — and otherwise the oldest unfinished one.
    private func isHead(_ entry: Entry) -> Bool {
        guard let scope = entry.scope else { return true }
        let holders = entries.values.filter { $0.scope == scope && holdsScope($0) }
        let tried = holders.filter { $0.status == .inFlight || $0.attempts > 0 }
        let first = (tried.isEmpty ? holders : tried).min { $0.sequence < $1.sequence }
        return first?.id == entry.id
    }

    /// Every entry `id` waits for through its dependencies, directly or not.
    /// Each is older than the one that depends on it: a link to a younger
    /// entry (an id discarded and enqueued again, which may even close a
    /// loop) is not a dependency any more, and ends the chain.
    private func ancestors(of id: OutboxEntry.ID?) -> [Entry] {
        var found: [Entry] = []
        var next = id
        while let parent = next, let entry = entries[parent], found.last.map({ entry.sequence < $0.sequence }) ?? true {
            found.append(entry)
            next = entry.parent
        }
        return found
    }

    private func mayGo(_ entry: Entry, at now: Date) -> Bool {
        (entry.status == .pending || entry.status == .waitingToRetry) && isHead(entry)
            && (entry.notBefore.map { $0 <= now } ?? true) && (entry.parent.map { delivered.contains($0) } ?? true)
    }

    /// What may be sent now: higher priority first, then older.
    func due(at now: Date, limit: Int = 100) -> [OutboxEntry.ID] {
        entries.values.filter { mayGo($0, at: now) }
            .sorted { $0.priority != $1.priority ? $0.priority > $1.priority : $0.sequence < $1.sequence }
            .prefix(limit).map(\.id)
    }

    /// Entries that depend on `parent`: enqueued after it (an older entry
    /// naming the same id depended on an earlier entry with that id, one
    /// discarded since).
    private func children(of parent: OutboxEntry.ID) -> [OutboxEntry.ID] {
        guard let sequence = entries[parent]?.sequence else { return [] }
        return entries.values.filter { $0.parent == parent && $0.sequence > sequence }.map(\.id)
    }

    // MARK: Operations

    enum Enqueued: Equatable {
        case enqueued, duplicate
        case coalesced(replaced: OutboxEntry.ID)
    }

    mutating func enqueue(
        _ id: OutboxEntry.ID, priority: Int, scope: String?, parent: OutboxEntry.ID?, coalescingKey: String?, maxAttempts: Int
    ) throws(Failure) -> Enqueued {
        if parent == id { throw .invalidArgument }  // depends on itself: refused before anything else
        if entries[id] != nil || delivered.contains(id) { return .duplicate }
        if let parent, entries[parent] == nil && !delivered.contains(parent) { throw .unknownDependency }
        var replaced: Entry?
        if let key = coalescingKey, let candidate = coalescingHolder(key),
            candidate.status == .pending, candidate.attempts == 0, children(of: candidate.id).isEmpty, parent != candidate.id
        {
            replaced = candidate
            entries[candidate.id] = nil
        }
        var entry = Entry(
            id: id, sequence: 0, priority: priority, scope: scope, parent: parent, coalescingKey: coalescingKey,
            maxAttempts: maxAttempts)
        // A replacement keeps the replaced entry's place in its scope, unless
        // that place is ahead of something it waits for: then (as when it
        // moves to another scope) it queues at the end.
        if let replaced, replaced.scope == scope, ancestors(of: parent).allSatisfy({ $0.sequence < replaced.sequence }) {
            entry.sequence = replaced.sequence  // keeps its place
        } else {
            entry.sequence = nextSequence
            nextSequence += 1
        }
        if let parent, !delivered.contains(parent), entries[parent]?.status == .quarantined {
            entry.status = .quarantined
            entry.quarantinedWith = parent
        }
        entries[id] = entry
        leftPending(entry)
        return replaced.map { .coalesced(replaced: $0.id) } ?? .enqueued
    }

    /// An entry that is not pending any more gives up its coalescing key
    /// for good (brought back by `retry`, it does not take it back).
    private mutating func leftPending(_ entry: Entry) {
        guard entry.status != .pending else { return }
        entries[entry.id]?.pristine = false
    }

    private func existing(_ id: OutboxEntry.ID) throws(Failure) -> Entry {
        guard let entry = entries[id] else { throw .notFound }
        return entry
    }

    mutating func begin(_ id: OutboxEntry.ID, at now: Date, lease: TimeInterval) throws(Failure) -> Int {
        var entry = try existing(id)
        guard mayGo(entry, at: now) else { throw .invalidTransition }
        entry.status = .inFlight
        entry.attempts += 1
        entry.notBefore = now.addingTimeInterval(lease)
        entries[id] = entry
        leftPending(entry)
        return entry.attempts
    }

    mutating func succeed(_ id: OutboxEntry.ID) throws(Failure) {
        guard try existing(id).status == .inFlight else { throw .invalidTransition }
        entries[id] = nil
        delivered.insert(id)
    }

    mutating func fail(_ id: OutboxEntry.ID, retryAt: Date) throws(Failure) -> (OutboxStatus, [OutboxEntry.ID]) {
        var entry = try existing(id)
        guard entry.status == .inFlight else { throw .invalidTransition }
        if entry.attempts >= entry.maxAttempts { return (.quarantined, try quarantine(id)) }
        entry.status = .waitingToRetry
        entry.notBefore = retryAt
        entries[id] = entry
        return (.waitingToRetry, [])
    }

    mutating func quarantine(_ id: OutboxEntry.ID) throws(Failure) -> [OutboxEntry.ID] {
        var entry = try existing(id)
        guard [.pending, .waitingToRetry, .inFlight, .conflict].contains(entry.status) else { throw .invalidTransition }
        entry.status = .quarantined
        entry.quarantinedWith = nil
        entries[id] = entry
        leftPending(entry)
        return killDependents(of: id)
    }

    /// Every live entry below `root` that can die (not in flight) dies.
    private mutating func killDependents(of root: OutboxEntry.ID) -> [OutboxEntry.ID] {
        var killed: [OutboxEntry.ID] = []
        var work = [root]
        while let parent = work.popLast() {
            for child in children(of: parent) {
                guard var entry = entries[child], [.pending, .waitingToRetry, .conflict].contains(entry.status) else { continue }
                entry.status = .quarantined
                entry.quarantinedWith = parent
                entries[child] = entry
                leftPending(entry)
                killed.append(child)
                work.append(child)
            }
        }
        return killed
    }

    mutating func conflict(_ id: OutboxEntry.ID) throws(Failure) {
        var entry = try existing(id)
        guard entry.status == .inFlight else { throw .invalidTransition }
        entry.status = .conflict
        entries[id] = entry
    }

    mutating func retry(_ id: OutboxEntry.ID, at now: Date) throws(Failure) -> [OutboxEntry.ID] {
        let entry = try existing(id)
        guard entry.status == .quarantined || entry.status == .conflict else { throw .invalidTransition }
        // Nothing is brought back to wait forever: a parent that is quarantined, or
        // gone without having been delivered, could never let it go.
        if let parent = entry.parent, !delivered.contains(parent), entries[parent].map({ $0.status == .quarantined }) ?? true {
            throw .invalidTransition
        }
        // Nor to wait for an entry younger than itself (an id discarded and
        // enqueued again): that could deadlock its scope.
        if let parent = entry.parent, let parentEntry = entries[parent], parentEntry.sequence > entry.sequence {
            throw .invalidTransition
        }
        revive(id, at: now)
        var revived: [OutboxEntry.ID] = []
        var work = [id]
        while let parent = work.popLast() {
            for child in children(of: parent) {
                guard let entry = entries[child], entry.status == .quarantined, entry.quarantinedWith == parent
                else { continue }
                revive(child, at: now)
                revived.append(child)
                work.append(child)
            }
        }
        return revived
    }

    private mutating func revive(_ id: OutboxEntry.ID, at now: Date) {
        entries[id]!.status = .pending
        entries[id]!.attempts = 0
        entries[id]!.notBefore = now
        entries[id]!.quarantinedWith = nil
    }

    mutating func discard(_ id: OutboxEntry.ID) throws(Failure) -> [OutboxEntry.ID] {
        let entry = try existing(id)
        guard entry.status != .inFlight else { throw .invalidTransition }
        let killed = killDependents(of: id)
        entries[id] = nil
        return killed
    }
}
