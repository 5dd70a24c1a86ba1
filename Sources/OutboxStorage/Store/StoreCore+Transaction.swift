import Foundation
import OutboxModel

/// Several entries enqueued all or nothing, in one write.
extension StoreCore {
    /// Enqueues `requests` as one atomic change: every one is admitted (or
    /// found a duplicate) and written in one log batch, or none is and the
    /// first refusal is thrown. A later request may depend on an earlier one.
    ///
    /// The batch is checked before anything changes and then applied
    /// (``Scheduler/enqueueAll(_:storedBytes:now:)``): it costs what it
    /// touches, not the size of the queue.
    func enqueue(_ requests: [OutboxEnqueueRequest]) async throws(OutboxError) -> [OutboxEnqueueResult] {
        if let configurationError { throw configurationError }
        let now = Date().milliseconds
        for request in requests {
            // A transaction waits for the store's load; its ids are used up.
            _ = FreshEntryIDs.take(request.id)
            try Admission.check(request)
            try Admission.payloadSize(request, configuration: configuration)
        }
        var prepared: [PreparedBody] = []
        do throws(OutboxError) {
            for request in requests { prepared.append(try await prepareBodyStoringPayload(request, now: now)) }
        } catch {
            await discardUnrecordedFiles(of: prepared)
            throw error
        }
        let outcomes: [(Scheduler.EnqueueOutcome, OutboxEntry?)]
        let acknowledgement: StoreAcknowledgement?
        var originals: [StoreAcknowledgement] = []
        do throws(OutboxError) {
            (outcomes, acknowledgement, originals) = try await submitBatch(requests, prepared, now: now)
        } catch {
            await discardFiles(of: prepared, after: error)
            throw error
        }
        await discardUnrecordedFiles(of: zip(prepared, outcomes).filter { $0.1.1 == nil }.map(\.0))
        try await wait(for: acknowledgement, configuration.enqueueDurability)
        for original in originals { try await wait(for: original, configuration.enqueueDurability) }
        return try zip(requests, outcomes).map { (request, outcome) throws(OutboxError) -> OutboxEnqueueResult in
            switch outcome {
            case (.duplicate(let id, let status), _): return .duplicate(id, status: status)
            case (.enqueued, let entry?): return .enqueued(entry)
            case (.coalesced(let replaced), let entry?): return .coalesced(entry, replaced: replaced)
            case (.enqueued, nil), (.coalesced, nil):
                throw OutboxError(.notFound, "vanished during enqueue", entry: request.id)
            }
        }
    }

    /// Admits the batch and hands its records to storage as one batch;
    /// returns each request's outcome (with its entry if it made one), the
    /// batch's acknowledgement, and those of the original enqueues of
    /// duplicates still in progress.
    private func submitBatch(
        _ requests: [OutboxEnqueueRequest], _ prepared: [PreparedBody], now: Int64
    ) async throws(OutboxError) -> ([(Scheduler.EnqueueOutcome, OutboxEntry?)], StoreAcknowledgement?, [StoreAcknowledgement]) {
        var originals: [StoreAcknowledgement] = []
        var inconsistency: OutboxError?
        let room = try await reserveRoom(for: prepared)
        let (outcomes, acknowledgement) = try submit(newBodies: prepared, room: room) {
            scheduler throws(OutboxError) -> ([(Scheduler.EnqueueOutcome, OutboxEntry?)], StoreChanges) in
            let results: [(Scheduler.EnqueueOutcome, StoreChanges)]
            do throws(Scheduler.BatchFailure) {
                results = try scheduler.enqueueAll(requests, storedBytes: prepared.map(\.storedBytes), now: now)
            } catch {
                switch error {
                case .refused(let refusal): throw refusal
                case .inconsistent(let refusal):
                    inconsistency = refusal
                    return ([], [])
                }
            }
            var outcomes: [(Scheduler.EnqueueOutcome, OutboxEntry?)] = []
            for ((outcome, changes), body) in zip(results, prepared) {
                var entry: OutboxEntry?
                if let metadata = scheduler.metadata(body.body.id), !changes.isEmpty {
                    var stored = body.body
                    stored.sequence = metadata.sequence
                    entry = stored.entry(
                        metadata: metadata, failure: scheduler.failure(body.body.id), completion: nil, strings: scheduler.strings)
                }
                outcomes.append((outcome, entry))
            }
            return (outcomes, StoreChanges(results.lazy.flatMap(\.1)))
        } whileLocked: { state, outcomes, acknowledgement in
            // Its duplicates' originals came before it: waiting for it covers them.
            if outcomes.contains(where: { $0.1 != nil }) { state.newestEnqueue = acknowledgement }
        } unchanged: { state, outcomes in
            if let inconsistency {
                // Memory holds part of a batch that storage never saw.
                state.failure = state.failure ?? inconsistency
                return
            }
            // Only duplicates: answer once their own enqueues have (the
            // newest enqueue is theirs or came after them).
            if let newest = state.newestEnqueue { originals.append(newest) }
        }
        if let inconsistency {
            throw OutboxError(
                .closed, "the transaction's check disagreed with its enqueue (a bug); reopen the store: \(inconsistency)")
        }
        return (outcomes, acknowledgement, originals)
    }
}

extension OutboxStore {
    /// Stores without an atomic batch accept one request at a time.
    public func enqueue(_ requests: [OutboxEnqueueRequest]) async throws(OutboxError) -> [OutboxEnqueueResult] {
        guard requests.count <= 1 else {
            throw OutboxError(.invalidArgument, "this store cannot enqueue several entries atomically")
        }
        guard let request = requests.first else { return [] }
        return [try await enqueue(request)]
    }
}
