import Foundation
import OutboxModel

/// The app's controls beyond retry and discard: "send now" for entries
/// waiting for their retry time, and the retention of quarantined entries.
extension Scheduler {
    /// Makes entries waiting for their retry time (`waitingToRetry`, not yet due)
    /// due at `now`, keeping their attempts: "send now", and what coming
    /// back online does for entries that backed off while offline. `ids`
    /// `nil`: every such entry. Returns the entries brought forward.
    mutating func bringForward(_ ids: [OutboxEntryID]?, now: Int64) -> (ids: [OutboxEntryID], changes: StoreChanges) {
        let candidates = ids ?? entries.values.filter { $0.status == .waitingToRetry }.map(\.id)
        var moved: [OutboxEntryID] = []
        for id in candidates {
            guard var entry = entries[id], entry.status == .waitingToRetry, entry.when > now else { continue }
            entry.when = now
            commit(entry)
            consider(id)
            moved.append(id)
        }
        return (moved, StoreChanges(moved.lazy.map { .state($0) }))
    }

    /// Removes the entries quarantined at or before `cutoff` (ms since
    /// 1970); their dependents, quarantined with them, follow once they too are
    /// past it. Returns the entries removed.
    mutating func removeQuarantined(before cutoff: Int64) -> (ids: [OutboxEntryID], changes: StoreChanges) {
        let expired = entries.values.filter { $0.status == .quarantined && $0.when <= cutoff }.sorted { $0.sequence < $1.sequence }
        var removed: [OutboxEntryID] = []
        var changes: StoreChanges = []
        for entry in expired where entries[entry.id] != nil {
            removeEntry(entry.id, cascade: .removed(entry.id), collecting: &changes)
            changes.append(.remove(entry.id))
            removed.append(entry.id)
        }
        return (removed, changes)
    }
}
