import Foundation
import OutboxStorage
import OutboxModel

/// The app's bulk controls over the queue, and what coming back online and
/// the retention of quarantined entries do.
extension OutboxDispatcher {
    /// Retries every quarantined or conflicting entry that `predicate`
    /// accepts (all of them by default), oldest first — a parent before its
    /// dependents, which its retry brings back with it — then flushes.
    /// Returns the entries retried (dependents brought back by a parent are
    /// not listed again). Entries that cannot be retried (their dependency
    /// is gone) are left as they are.
    @discardableResult
    public func retryAll(
        where predicate: (OutboxEntry) -> Bool = { _ in true }
    ) async throws(OutboxError) -> [OutboxEntry.ID] {
        let candidates = try await store.entries(matching: OutboxFilter(statuses: [.quarantined, .conflict])).filter(predicate)
        var retried: [OutboxEntry.ID] = []
        for entry in candidates.sorted(by: { $0.sequence < $1.sequence }) {
            // A parent retried earlier may have brought it back already.
            guard let status = try await store.state(of: entry.id)?.status, status == .quarantined || status == .conflict else { continue }
            do {
                _ = try await store.retry(entry.id, at: clock.now())
                retried.append(entry.id)
            } catch where error.code == .invalidTransition {
                logger.notice("not retried", metadata: ["id": "\(entry.id)", "reason": "\(error.message)"])
            }
        }
        if !retried.isEmpty { Task { await self.flush() } }
        return retried
    }

    /// Discards every entry `predicate` accepts that is not being sent (an
    /// entry in flight is left to its attempt); their dependents are
    /// quarantined, as with ``discard(_:)``. Returns the entries discarded.
    /// Not atomic: each discard is its own write.
    @discardableResult
    public func discard(where predicate: (OutboxEntry) -> Bool) async throws(OutboxError) -> [OutboxEntry.ID] {
        let candidates = try await store.entries(matching: .all).filter { $0.status != .inFlight && predicate($0) }
        var discarded: [OutboxEntry.ID] = []
        for entry in candidates {
            guard try await store.state(of: entry.id).map({ $0.status != .inFlight && $0.status != .succeeded }) ?? false
            else { continue }
            try await discard(entry.id)
            discarded.append(entry.id)
        }
        return discarded
    }

    /// Back online: entries that backed off because they could not reach
    /// the server (or lost their answer) in this process go at once instead
    /// of at the end of their backoff; then flushes.
    func backOnline() async {
        let waiting = attempts.runs.withLock { Array($0.streaks.keys) }
        if !waiting.isEmpty {
            do {
                let moved = try await store.bringForward(waiting, at: clock.now())
                if !moved.isEmpty { logger.debug("back online: retrying now", metadata: ["count": "\(moved.count)"]) }
            } catch {
                publish(.storeFailed(nil, error: error))
            }
        }
        await flush()
    }

    /// Removes the entries quarantined longer ago than
    /// ``OutboxDispatcherConfiguration/quarantineRetention``, each with a
    /// ``/OutboxModel/OutboxEvent/discarded(_:because:)`` event.
    func removeExpiredQuarantined(at now: Date) async {
        guard let retention = configuration.quarantineRetention else { return }
        do {
            let removed = try await store.removeQuarantined(before: now.adding(.zero - retention))
            for id in removed {
                publish(.discarded(id, because: .quarantinedTooLong(retention)))
            }
        } catch {
            publish(.storeFailed(nil, error: error))
            logger.error("cannot remove expired quarantined entries", metadata: ["error": "\(error)"])
        }
    }
}
