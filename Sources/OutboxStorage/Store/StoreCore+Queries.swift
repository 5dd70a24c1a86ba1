import Foundation
import OutboxModel

/// Reads: entries, the summary, dependents and completions.
extension StoreCore {
    func entry(_ id: OutboxEntryID) async throws(OutboxError) -> OutboxEntry? {
        try await entries([id])[0]
    }

    /// The entries with these ids (`nil` for one that is gone), bodies read
    /// in one batch.
    func entries(_ ids: [OutboxEntryID]) async throws(OutboxError) -> [OutboxEntry?] {
        await waitUntilLoaded()
        let live = try read { scheduler in ids.filter { scheduler.metadata($0) != nil } }
        guard !live.isEmpty else { return Array(repeating: nil, count: ids.count) }
        let bodies = Dictionary(
            zip(live, try await backend.bodies(of: live)).compactMap { id, body in body.map { (id, $0) } },
            uniquingKeysWith: { first, _ in first })
        // Read the state after the bodies: the freshest view of both.
        return try read { scheduler in
            ids.map { id -> OutboxEntry? in
                guard let body = bodies[id], let metadata = scheduler.metadata(id) else { return nil }
                return body.entry(
                    metadata: metadata, failure: scheduler.failure(id), completion: scheduler.completion(id),
                    strings: scheduler.strings)
            }
        }
    }

    func entries(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry] {
        await waitUntilLoaded()
        let ids = try read { $0.ids(matching: filter) }
        var result: [OutboxEntry] = []
        result.reserveCapacity(ids.count)
        // In pages: one read job per 512 entries, however long the queue.
        for start in stride(from: 0, to: ids.count, by: 512) {
            result += try await entries(Array(ids[start..<min(start + 512, ids.count)])).compactMap { $0 }
        }
        return result
    }

    func summary() async throws(OutboxError) -> OutboxSummary {
        await waitUntilLoaded()
        return try fullSummary()
    }

    func dependents(of id: OutboxEntryID) async throws(OutboxError) -> [OutboxEntryID] {
        await waitUntilLoaded()
        return try read { $0.dependents(of: id) }
    }

    func completion(of id: OutboxEntryID) async throws(OutboxError) -> OutboxCompletion? {
        await waitUntilLoaded()
        return try read { scheduler in
            scheduler.completion(id).map {
                OutboxCompletion(serverID: $0.serverID, syncedAt: Date(milliseconds: $0.syncedAt))
            }
        }
    }
}
