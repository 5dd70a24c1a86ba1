import Foundation
import OutboxStorage
import OutboxModel

/// Recording the successes of many attempts at once: one store write and
/// one wait for a whole batch (``/OutboxStorage/OutboxStore/recordSuccesses(_:at:)``).
extension DeliveryAttempts {
    /// Records `batch` as delivered, publishes their events and counts them.
    /// An entry whose success could not be recorded is released as an
    /// interrupted attempt (the server applied it; it is resent with the
    /// same key, and the server replays it).
    /// `serverID` if a store keeps it; `nil`, with a warning, for one longer
    /// than ``/OutboxModel/OutboxLimits/maximumServerIDBytes``: the server applied the
    /// write, and a store that refused the success would have it resent —
    /// and answered with the same id — for ever. Its `local:` references
    /// then cannot resolve (their entries are quarantined, saying so).
    func keptServerID(_ serverID: String?, of id: OutboxEntry.ID) -> String? {
        guard let serverID, serverID.utf8.count > OutboxLimits.maximumServerIDBytes else { return serverID }
        logger.warning(
            "delivered, but the server's id is too long to keep",
            metadata: ["id": "\(id)", "bytes": "\(serverID.utf8.count)", "limit": "\(OutboxLimits.maximumServerIDBytes)"])
        return nil
    }

    func recordDeliveries(_ batch: [AttemptInbox.Delivered]) async -> OutboxFlushReport {
        var report = OutboxFlushReport()
        runs.withLock { runs in
            for delivery in batch {
                runs.streaks[delivery.id] = nil
                runs.inProgress[delivery.id] = nil
            }
        }
        var successes: [OutboxSuccess] = []
        successes.reserveCapacity(batch.count)
        for delivery in batch { successes.append(OutboxSuccess(id: delivery.id, serverID: keptServerID(delivery.serverID, of: delivery.id))) }
        var failed: [OutboxEntry.ID: OutboxError]
        do {
            failed = try await store.recordSuccesses(successes, at: clock.now())
        } catch {
            failed = Dictionary(batch.map { ($0.id, error) }, uniquingKeysWith: { first, _ in first })
        }
        for delivery in batch {
            let id = delivery.id
            if let error = failed[id] {
                report.errors.append(error.about(id))
                publish(.storeFailed(id, error: error))
                logger.error("attempt failed in the store", metadata: ["id": "\(id)", "error": "\(error)"])
                await release(id, because: error, sent: true)
                continue
            }
            report.delivered += 1
            metrics.delivered.increment()
            if delivery.replayed {
                report.replayed += 1
                metrics.replayed.increment()
                publish(.replayed(id, serverID: delivery.serverID))
            }
            publish(.delivered(id, serverID: delivery.serverID))
        }
        return report
    }
}
