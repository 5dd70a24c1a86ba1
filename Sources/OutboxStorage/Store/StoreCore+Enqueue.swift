import Foundation
import OutboxModel

/// Enqueueing: admission, the body prepared before the lock, the entry
/// admitted under it, and the wait for the durability asked for.
extension StoreCore {
    func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        if let configurationError { throw configurationError }
        let now = Date().milliseconds
        try Admission.check(request)
        try Admission.payloadSize(request, configuration: configuration)
        guard Admission.goesToFile(request.payload.count, configuration) else {
            return try await enqueue(request, prepared: try prepareBody(request, now: now), now: now)
        }
        // The payload's file is written and synced before the entry that
        // references it is handed to the log (Docs/DURABILITY.md, "Payload files").
        let prepared = try await prepareBodyStoringPayload(request, now: now)
        let result: OutboxEnqueueResult
        do throws(OutboxError) { result = try await enqueue(request, prepared: prepared, now: now) } catch {
            await discardFiles(of: [prepared], after: error)
            throw error
        }
        if case .duplicate = result { await discardUnrecordedFiles(of: [prepared]) }
        return result
    }

    /// An enqueue whose body is prepared (its payload file, if any, written).
    private func enqueue(
        _ request: OutboxEnqueueRequest, prepared: PreparedBody, now: Int64
    ) async throws(OutboxError) -> OutboxEnqueueResult {
        // Every enqueue uses up the id's freshness, admitted early or not.
        let fresh = FreshEntryIDs.take(request.id)
        var reserved: StoreRoom?
        if loadsInBackground, fresh, admitsWhileLoading(request), state.withLock({ $0.loading != nil }) {
            let room = try await backend.reserveRoom(bytes: (prepared.encoded?.count ?? 0) + Self.roomForStateRecords)
            if let (entry, acknowledgement) = try admitWhileLoading(request, prepared: prepared, room: room) {
                try await wait(for: acknowledgement, configuration.enqueueDurability)
                return .enqueued(entry)
            }
            reserved = room  // loaded meanwhile: the ordinary path, in the room reserved
        }
        // The new entry is built from the body in hand: reading it back would
        // wait for the write and cost a read per enqueue.
        var original: StoreAcknowledgement?
        let ((outcome, entry), acknowledgement) = try await submit(newBodies: [prepared], reservedRoom: reserved) {
            scheduler throws(OutboxError) in
            let (outcome, changes) = try scheduler.enqueue(request, storedBytes: prepared.storedBytes, now: now)
            var entry: OutboxEntry?
            if let metadata = scheduler.metadata(request.id), !changes.isEmpty {
                var body = prepared.body
                body.sequence = metadata.sequence
                entry = body.entry(
                    metadata: metadata, failure: scheduler.failure(request.id), completion: nil, strings: scheduler.strings)
            }
            return ((outcome, entry), changes)
        } whileLocked: { state, result, acknowledgement in
            // Until it is seen acknowledged, a claim waits for the enqueue's durability.
            if result.1 != nil { state.newestEnqueue = acknowledgement }
        } unchanged: { state, result in
            // A duplicate of an enqueue still in progress answers once that
            // one has: the newest enqueue is that one or came after it.
            if case .duplicate = result.0 { original = state.newestEnqueue }
        }
        if try !reachedWithoutWaiting(acknowledgement ?? original, configuration.enqueueDurability) {
            try await wait(for: acknowledgement ?? original, configuration.enqueueDurability)
        }
        switch (outcome, entry) {
        case (.duplicate(let id, let status), _): return .duplicate(id, status: status)
        case (.enqueued, let entry?): return .enqueued(entry)
        case (.coalesced(let replaced), let entry?): return .coalesced(entry, replaced: replaced)
        case (.enqueued, nil), (.coalesced, nil):
            throw OutboxError(.notFound, "vanished during enqueue", entry: request.id)
        }
    }

    /// The new entry's body, encoded (and sealed) outside the lock; its
    /// sequence is filled in under it. Checks that its record fits the log.
    func prepareBody(
        _ request: OutboxEnqueueRequest, now: Int64, payloadFile: PayloadFileReference? = nil
    ) throws(OutboxError) -> PreparedBody {
        try Self.prepareBody(
            request, partition: partition, configuration: configuration, now: now, payloadFile: payloadFile,
            prepare: { body throws(OutboxError) in try backend.prepare(body) })  // a closure, not `backend.prepare`: no context to allocate
    }
}
