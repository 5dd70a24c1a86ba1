import Foundation
import OutboxModel

extension OutboxStore {
    public func bringForward(_ ids: [OutboxEntry.ID]?, at now: Date) async throws(OutboxError) -> [OutboxEntry.ID] { [] }
    public func removeQuarantined(before cutoff: Date) async throws(OutboxError) -> [OutboxEntry.ID] { [] }
}

extension StoreCore {
    func bringForward(_ ids: [OutboxEntryID]?, at now: Date) async throws(OutboxError) -> [OutboxEntryID] {
        let time = try Admission.milliseconds(now, "now")
        // Losing it to a crash only puts the retry time back: `written` is enough.
        return try await perform(configuration.attemptDurability) { scheduler in
            scheduler.bringForward(ids, now: time)
        }
    }

    func removeQuarantined(before cutoff: Date) async throws(OutboxError) -> [OutboxEntryID] {
        let time = try Admission.milliseconds(cutoff, "cutoff")
        return try await perform(configuration.outcomeDurability) { scheduler in
            scheduler.removeQuarantined(before: time)
        }
    }
}
