import Foundation
import OutboxLocking

/// The ids this process minted (``OutboxEntryID/init()``) and has not yet
/// enqueued anywhere: the only ids a store may admit without looking them
/// up, while it is still loading after a reopen.
///
/// An id minted here from 122 random bits was never stored by anyone (a
/// collision is as likely as two random version-4 UUIDs colliding, which
/// the store's derived idempotency keys already rely on) — until it first
/// leaves this process, in an enqueue, a transaction or a spool written for
/// a queue another process holds, which takes it out (``take(_:)``),
/// whether that write succeeds or not: a second enqueue of the same id,
/// after a reopen in this process say, is looked up like any other. Ids read back from disk, parsed
/// from text or built from a UUID the app chose never pass through here.
///
/// Bounded: only the most recent ``capacity`` ids minted are kept; an older
/// one simply takes the ordinary path (it waits for the load). A miss costs
/// time, never correctness.
package enum FreshEntryIDs {
    package static let capacity = 4096

    private struct Ring {
        var members: Set<UUID> = []
        var order: [UUID] = []
        var next = 0
    }

    private static let ring = Locked(Ring())

    /// Records that `uuid` was just minted.
    package static func minted(_ uuid: UUID) {
        ring.withLock { ring in
            if ring.order.count < capacity {
                ring.order.append(uuid)
            } else {
                ring.members.remove(ring.order[ring.next])
                ring.order[ring.next] = uuid
                ring.next = (ring.next + 1) % capacity
            }
            ring.members.insert(uuid)
        }
    }

    /// Whether `id` was minted here and never enqueued; forgets it either way.
    package static func take(_ id: OutboxEntryID) -> Bool {
        ring.withLock { $0.members.remove(id.uuid) != nil }
    }
}
