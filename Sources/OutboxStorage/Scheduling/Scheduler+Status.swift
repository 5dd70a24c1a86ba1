import Foundation
import OutboxModel

/// An entry's status and the partition's counts: every status change goes
/// through ``setStatus(_:_:)``, which keeps the counts and bytes per status
/// and the coalescing bookkeeping true, and every write of an entry through
/// ``commit(_:)``, which moves its version on (stale heap items are then
/// recognised).
extension Scheduler {
    func existing(_ id: OutboxEntryID) throws(OutboxError) -> EntryMetadata {
        guard let entry = entries[id] else { throw OutboxError(.notFound, "no such entry", entry: id) }
        return entry
    }


    func transitionError(_ entry: EntryMetadata, to next: OutboxStatus) -> OutboxError {
        OutboxError(.invalidTransition, "cannot move from \(entry.status) to \(next)", entry: entry.id)
    }

    mutating func adjust(_ status: OutboxStatus, count: Int, bytes size: Int) {
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
        // A quarantined entry is never due: its time says when it was quarantined, for the
        // retention of quarantined entries (``removeQuarantined(before:)``).
        if status == .quarantined && entry.status != .quarantined { entry.when = configuration.clock().milliseconds }
        entry.status = status
    }

    mutating func commit(_ entry: EntryMetadata) {
        var entry = entry
        entry.version &+= 1
        entries[entry.id] = entry
    }
}
