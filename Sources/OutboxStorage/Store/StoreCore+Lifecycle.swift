import Foundation
import OutboxModel

/// Clearing, pruning, changes made while loading, and closing.
extension StoreCore {
    func clear() async throws(OutboxError) {
        try await perform(configuration.outcomeDurability) { scheduler in ((), scheduler.clear()) }
    }

    func prune(at now: Date) async throws(OutboxError) {
        let time = try Admission.milliseconds(now, "now")
        try await perform(configuration.outcomeDurability) { scheduler in ((), scheduler.prune(now: time)) }
    }

    /// Persists changes made while loading (crash-left leases reset).
    func persistLoadingChanges(_ changes: StoreChanges) async throws(OutboxError) {
        guard !changes.isEmpty else { return }
        try await perform(configuration.attemptDurability) { _ in ((), changes) }
    }

    func close() async throws(OutboxError) {
        // A clean close leaves a checkpoint: the next open reads it instead
        // of every entry (not while loading, nor once storage failed).
        if checkpointFile != nil, state.withLock({ !$0.closed && $0.loading == nil && $0.failure == nil }) {
            await writeCheckpoint(waitingForRunning: true)
        }
        let alreadyClosed = state.withLock { state -> Bool in
            defer { state.closed = true }
            return state.closed
        }
        if !alreadyClosed {
            try await backend.close()
            await stopLoading()
        }
    }
}
