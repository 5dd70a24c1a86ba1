import Foundation
import OutboxLog

/// One spooled entry on its way into the queue.
struct SpooledEntry: Sendable {
    var spool: SpoolID
    /// The spool log's sequence number of the entry's record.
    var sequence: UInt64
    var body: EntryBody
    /// The record's value: the body's stored form (sealed if the queue is),
    /// reused as is, its sequence patched in by the queue.
    var stored: [UInt8]

    /// The request a direct enqueue of this entry would have made.
    var request: OutboxEnqueueRequest {
        OutboxEnqueueRequest(
            id: body.id, idempotencyKey: body.keySuppliedByApp ? body.idempotencyKey : nil, type: body.type,
            method: body.method, endpoint: body.endpoint, payload: body.payload, headers: body.headers,
            scope: body.scope, dependencies: body.dependencies, priority: Int(body.priority),
            coalescingKey: body.coalescingKey, maxAttempts: Int(body.maxAttempts),
            createdAt: Date(milliseconds: body.createdAt))
    }
}

extension StoreCore {
    /// What became of one spooled entry.
    enum IngestOutcome {
        case enqueued
        /// Already in the queue (its id, or its app-supplied key): only the mark moved.
        case duplicate
        /// Recorded dead at once: a dependency this queue does not know.
        case quarantined
    }

    /// Moves one spooled entry in: the scheduler admits it as an enqueue
    /// would (duplicates, coalescing, scopes, limits), and its records go
    /// to the log in **one batch with the spool's mark** (``SpoolMark``)
    /// — for a duplicate, the mark alone. Returns without waiting; the
    /// acknowledgement covers the batch.
    ///
    /// - Throws: ``OutboxError`` `.full` (nothing written: the entry stays
    ///   in its spool), or a storage error (the store is then closed).
    func ingest(_ spooled: SpooledEntry) async throws(OutboxError) -> (IngestOutcome, StoreAcknowledgement) {
        guard let backend = backend as? LogBackend else {
            throw OutboxError(.invalidArgument, "only a log-backed store takes spooled entries")
        }
        let request = spooled.request
        let prepared = PreparedBody(body: spooled.body, encoded: spooled.stored, storedBytes: spooled.stored.count)
        let now = Date().milliseconds
        let room = try await reserveRoom(for: [prepared])
        let mark = SpoolMark.write(spooled.spool, through: spooled.sequence)
        return try state.withLock { state throws(OutboxError) -> (IngestOutcome, StoreAcknowledgement) in
            try check(state)
            let (outcome, changes) = try state.scheduler.enqueue(
                request, storedBytes: prepared.storedBytes, now: now, spooled: true)
            do throws(OutboxError) {
                var writes = try backend.writes(for: changes, newBodies: [prepared], scheduler: state.scheduler)
                writes.append(mark)
                let acknowledgement = try backend.submit(writes, room: room)
                if changes.isEmpty { return (.duplicate, acknowledgement) }
                // Until the batch is durable, a claim of it waits (as for an enqueue).
                state.unconfirmed[request.id] = acknowledgement
                if case .duplicate = outcome { return (.duplicate, acknowledgement) }
                return (state.scheduler.metadata(request.id)?.status == .quarantined ? .quarantined : .enqueued, acknowledgement)
            } catch {
                state.failure = error
                throw error
            }
        }
    }

    /// After the batches of ``ingest(_:)`` are durable: claims of these
    /// entries no longer wait.
    func confirmIngested(_ ids: [OutboxEntryID]) {
        state.withLock { state in
            for id in ids { state.unconfirmed.removeValue(forKey: id) }
        }
    }
}
