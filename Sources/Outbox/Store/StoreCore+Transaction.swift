import Foundation

/// Several entries enqueued all or nothing, in one write.
extension StoreCore {
    /// Enqueues `requests` as one atomic change: every one is admitted (or
    /// found a duplicate) and written in one log batch, or none is and the
    /// first refusal is thrown. A later request may depend on an earlier one.
    ///
    /// The batch runs on a copy of the partition's scheduling state, kept
    /// only if every enqueue is admitted: a transaction costs time and
    /// memory in proportion to the queue (meant for a few related writes,
    /// not for bulk loading).
    func enqueue(_ requests: [OutboxEnqueueRequest]) async throws(OutboxError) -> [OutboxEnqueueResult] {
        if let configurationError { throw configurationError }
        let now = Date().milliseconds
        var prepared: [PreparedBody] = []
        for request in requests {
            try Admission.check(request)
            try Admission.payloadSize(request, limit: configuration.log.maximumRecordSize)
            prepared.append(try prepareBody(request, now: now))
        }
        var originals: [StoreAcknowledgement] = []
        let room = try await reserveRoom(for: prepared)
        let (outcomes, acknowledgement) = try submit(newBodies: prepared, room: room) { scheduler throws(OutboxError) in
            var trial = scheduler
            var outcomes: [(Scheduler.EnqueueOutcome, OutboxEntry?)] = []
            var changes: [StoreChange] = []
            for (request, body) in zip(requests, prepared) {
                let (outcome, more) = try trial.enqueue(request, storedBytes: body.storedBytes, now: now)
                var entry: OutboxEntry?
                if let metadata = trial.metadata(request.id), !more.isEmpty {
                    var stored = body.body
                    stored.sequence = metadata.sequence
                    entry = stored.entry(metadata: metadata, failure: trial.failure(request.id), completion: nil, strings: trial.strings)
                }
                outcomes.append((outcome, entry))
                changes += more
            }
            scheduler = trial
            return (outcomes, changes)
        } whileLocked: { state, outcomes, acknowledgement in
            for (request, outcome) in zip(requests, outcomes) where outcome.1 != nil {
                state.unconfirmed[request.id] = acknowledgement
            }
        } unchanged: { state, outcomes in
            // Only duplicates: answer once their own enqueues have.
            for outcome in outcomes {
                if case .duplicate(let id, _) = outcome.0, let original = state.unconfirmed[id] { originals.append(original) }
            }
        }
        try await wait(for: acknowledgement, configuration.enqueueDurability)
        for original in originals { try await wait(for: original, configuration.enqueueDurability) }
        state.withLock { state in for request in requests { state.unconfirmed.removeValue(forKey: request.id) } }
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

extension InMemoryOutboxStore {
    public func enqueue(_ requests: [OutboxEnqueueRequest]) async throws(OutboxError) -> [OutboxEnqueueResult] {
        try await core.enqueue(requests)
    }
}

extension LogOutboxStore {
    public func enqueue(_ requests: [OutboxEnqueueRequest]) async throws(OutboxError) -> [OutboxEnqueueResult] {
        try await core.enqueue(requests)
    }
}
