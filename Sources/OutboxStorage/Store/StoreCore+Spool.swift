import Foundation
import OutboxLog
import OutboxModel

extension StoreCore {
    /// What became of one spooled entry.
    enum IngestOutcome {
        case enqueued
        /// Already in the queue (its id, or its app-supplied key): only the mark moved.
        case duplicate
        /// Recorded quarantined at once: a dependency this queue does not know.
        case quarantined
    }

    /// Moves one spooled entry in: it is admitted as a direct enqueue would
    /// be — its values checked (``Admission``), its size judged by this
    /// queue's limits, its payload moved into a payload file if it is above
    /// this queue's threshold — then the scheduler admits it (duplicates,
    /// coalescing, scopes, limits), and its records go to the log in **one
    /// batch with the spool's mark** (``SpoolMark``) — for a duplicate, the
    /// mark alone. Returns without waiting; the acknowledgement covers the
    /// batch.
    ///
    /// - Throws: ``/OutboxModel/OutboxError`` `.full` (nothing written: the entry stays
    ///   in its spool); `.invalidArgument`, `.tooLarge` or `.corruptEntry`
    ///   for an entry this queue can never take as it was spooled (nothing
    ///   written: ``skip(_:)`` moves the mark past it once it is set
    ///   aside); or a storage error (the store is then closed).
    /// Whether the queue holds, or remembers delivering, every one of
    /// `dependencies` (`false` if one is unknown to it).
    func holdsAll(ofDependencies dependencies: [OutboxEntryID]) async throws(OutboxError) -> Bool {
        guard !dependencies.isEmpty else { return true }
        await waitUntilLoaded()
        return try read { scheduler in
            dependencies.allSatisfy { scheduler.entries.contains($0) || scheduler.completions[$0] != nil }
        }
    }

    func ingest(_ spooled: SpooledEntry) async throws(OutboxError) -> (IngestOutcome, StoreAcknowledgement) {
        guard let backend = backend as? LogBackend else {
            throw OutboxError(.invalidArgument, "only a log-backed store takes spooled entries")
        }
        let request = spooled.request
        let now = Date().milliseconds
        let prepared = try await admit(spooled, now: now)
        let mark = SpoolMark.write(spooled.spool, through: spooled.sequence)
        let result: (IngestOutcome, StoreAcknowledgement)
        do throws(OutboxError) {
            let room = try await reserveRoom(for: [prepared])
            result = try state.withLock { state throws(OutboxError) -> (IngestOutcome, StoreAcknowledgement) in
                try check(state)
                let (outcome, changes) = try state.scheduler.enqueue(
                    request, storedBytes: prepared.storedBytes, now: now, spooled: true)
                do throws(OutboxError) {
                    var writes = try backend.writes(for: changes, newBodies: [prepared], scheduler: state.scheduler)
                    writes.append(mark)
                    let acknowledgement = try backend.submit(writes, room: room)
                    if changes.isEmpty { return (.duplicate, acknowledgement) }
                    // Until the batch is durable, a claim of it waits (as for an enqueue).
                    state.newestEnqueue = acknowledgement
                    if case .duplicate = outcome { return (.duplicate, acknowledgement) }
                    return (state.scheduler.metadata(request.id)?.status == .quarantined ? .quarantined : .enqueued, acknowledgement)
                } catch {
                    state.failure = error
                    throw error
                }
            }
        } catch {
            await discardFiles(of: [prepared], after: error)
            throw error
        }
        if result.0 == .duplicate { await discardUnrecordedFiles(of: [prepared]) }
        return result
    }

    /// The spooled entry as this queue stores it, admitted as a direct
    /// enqueue is: the writer's limits and checks are not this queue's,
    /// and its bytes are hostile until checked.
    private func admit(_ spooled: SpooledEntry, now: Int64) async throws(OutboxError) -> PreparedBody {
        let request = spooled.request
        guard spooled.body.payloadFile == nil else {
            // A writer never writes payload files: this one names a file of the queue's.
            throw OutboxError(.corruptEntry, "a spooled entry that names a payload file", entry: request.id)
        }
        try Admission.check(request)
        try Admission.payloadSize(request, configuration: configuration)
        if Admission.goesToFile(request.payload.count, configuration) {
            return try await prepareBodyStoringPayload(request, now: now)
        }
        try Admission.recordSize(
            LogBackend.frameSize(ofBody: spooled.stored.count), limit: configuration.log.maximumRecordSize, entry: request.id)
        return PreparedBody(body: spooled.body, encoded: spooled.stored, storedBytes: spooled.stored.count)
    }

    /// Moves the mark of `spool` through `sequence`, a record this queue
    /// can never take and which has been set aside (``SetAsideRecords``):
    /// the mark alone, in a batch of its own. Returns without waiting.
    func skip(spool: SpoolID, through sequence: UInt64) async throws(OutboxError) -> StoreAcknowledgement {
        guard let backend = backend as? LogBackend else {
            throw OutboxError(.invalidArgument, "only a log-backed store takes spooled entries")
        }
        let room = try await reserveRoom(for: [])
        return try state.withLock { state throws(OutboxError) -> StoreAcknowledgement in
            try check(state)
            do throws(OutboxError) {
                return try backend.submit([SpoolMark.write(spool, through: sequence)], room: room)
            } catch {
                state.failure = error
                throw error
            }
        }
    }
}
