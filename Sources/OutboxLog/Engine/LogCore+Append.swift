import Foundation

/// Appends: validated outside the lock, encoded and indexed under it, then
/// (for `written` and `durable`) parked until the writer thread reports.
extension LogCore {
    /// Appends `writes` as one atomic batch; returns the sequence number of
    /// the last record. Waits for room first if too many bytes are waiting
    /// to be written (see `LogCore+BackPressure.swift`).
    func append<Writes: RandomAccessCollection<LogWrite>>(
        _ writes: Writes, durability: Durability
    ) async throws(OutboxLogError) -> UInt64 {
        let bytes = try validate(writes)
        // An annotation is checked against the index: wait until it is whole.
        if hasIndexLoader, writes.contains(where: { $0.kind == .annotation }) { try await waitForIndex() }
        let maximum = configuration.maximumPendingBytes
        var reserved = false
        while true {
            switch durability {
            case .buffered:
                let encoded = try state.withLock { state throws(OutboxLogError) -> (UInt64, Bool)? in
                    guard state.takeRoom(bytes, reserved: reserved, maximum: maximum) else { return nil }
                    let sequence = try encode(writes, into: &state)
                    return (sequence, state.writeIsDue(configuration) && state.claimWriterWakeup())
                }
                if let (sequence, wake) = encoded {
                    wakeWriter(wake)
                    return sequence
                }
            case .written, .durable:
                var sequence: UInt64?
                var inPlace: InPlaceWrite?
                let result = await withUnsafeContinuation {
                    (continuation: UnsafeContinuation<Result<Void, OutboxLogError>, Never>) in
                    let outcome = state.withLock { state -> Result<Bool, OutboxLogError> in
                        guard state.takeRoom(bytes, reserved: reserved, maximum: maximum) else { return .success(false) }
                        do throws(OutboxLogError) {
                            sequence = try encode(writes, into: &state)
                        } catch {
                            return .failure(error)
                        }
                        // Nobody writing: write it ourselves, no thread hand-off.
                        if durability == .written, let write = takeInPlaceWrite(through: sequence!, &state) {
                            inPlace = write
                            return .success(false)
                        }
                        state.waiters.append(
                            Waiter(sequence: sequence!, durable: durability == .durable, continuation: continuation))
                        return .success(state.claimWriterWakeup())
                    }
                    switch outcome {
                    case .success(let wake):
                        if sequence == nil || inPlace != nil {
                            continuation.resume(returning: .success(()))
                        } else {
                            wakeWriter(wake)
                        }
                    case .failure(let error):
                        continuation.resume(returning: .failure(error))
                    }
                }
                try result.get()
                if let inPlace { try finishInPlace(inPlace) }
                if let sequence { return sequence }
            }
            // Not admitted: wait until the writer has made room, reserved for us.
            try await reserveRoom(bytes)
            reserved = true
        }
    }

    /// Encodes and indexes `writes` now, without waiting for any I/O;
    /// returns the sequence number of the last record. Without a
    /// `reservation`, refused with `.backPressure` if it is not admitted;
    /// with one (room reserved by ``reserveRoom(_:)``), always admitted, and
    /// the room is used up whatever the outcome (see
    /// `LogCore+BackPressure.swift`).
    func submit<Writes: RandomAccessCollection<LogWrite>>(
        _ writes: Writes, reservation: LogReservation? = nil
    ) throws(OutboxLogError) -> UInt64 {
        let bytes: Int
        do throws(OutboxLogError) {
            bytes = try validate(writes)
        } catch {
            if let reservation, state.withLock({ reservation.take(&$0) }) { releaseRoom(reservation.bytes) }
            throw error
        }
        // An annotation is checked against the index: wait until it is whole.
        if hasIndexLoader, writes.contains(where: { $0.kind == .annotation }) { waitForIndexBlocking() }
        let maximum = configuration.maximumPendingBytes
        let (outcome, granted) = state.withLock { state -> (Result<(UInt64, Bool), OutboxLogError>, [RoomWaiter]) in
            let outcome = Result { () throws(OutboxLogError) -> (UInt64, Bool) in
                if let reservation {
                    guard reservation.take(&state) else {
                        throw OutboxLogError(.invalidArgument, "the reservation was committed already")
                    }
                    state.reservedBytes -= reservation.bytes
                } else {
                    if let error = state.isAcceptingWrites { throw error }
                    guard state.admits(bytes, maximum: maximum) else {
                        throw OutboxLogError(
                            .backPressure,
                            "\(state.pendingBytes + state.reservedBytes) bytes are waiting to be written, the most is "
                                + "\(maximum): this batch of \(bytes) bytes would exceed it; wait for room and submit again")
                    }
                }
                let sequence = try encode(writes, into: &state)
                return (sequence, state.writeIsDue(configuration) && state.claimWriterWakeup())
            }
            // Room reserved and not filled goes to whoever waits for it.
            return (outcome, reservation == nil ? [] : state.grantRoom(maximum: maximum))
        }
        for waiter in granted { waiter.continuation.resume(returning: .success(())) }
        let (sequence, wake) = try outcome.get()
        wakeWriter(wake)
        return sequence
    }

    /// Waits until `sequence` reached `durability`; for `buffered`, waits
    /// only if too many bytes are pending (back-pressure).
    func wait(for sequence: UInt64, reaching durability: Durability) async throws(OutboxLogError) {
        switch durability {
        case .buffered:
            let overfull = state.withLock { $0.pendingBytes > configuration.maximumPendingBytes }
            if overfull { try await waitFor(sequence, durable: false) }
        case .written: try await waitFor(sequence, durable: false)
        case .durable: try await waitFor(sequence, durable: true)
        }
    }

    /// Brings `sequence` to `durability` now if no waiting is needed (see
    /// ``LogTicket/reachedWithoutWaiting(_:)``); `false` if it is.
    func reachWithoutWaiting(_ sequence: UInt64, _ durability: Durability) throws(OutboxLogError) -> Bool {
        let decision = try state.withLock { state throws(OutboxLogError) -> InPlaceWrite?? in
            switch durability {
            case .buffered:
                return state.pendingBytes > configuration.maximumPendingBytes ? .none : .some(nil)
            case .durable:
                return sequence <= state.durableSequence ? .some(nil) : .none
            case .written:
                if sequence <= state.writtenSequence { return .some(nil) }
                if case .poisoned(let error) = state.phase { throw .poisoned(by: error) }
                if case .closed = state.phase { throw .closed() }
                return takeInPlaceWrite(through: sequence, &state).map { .some($0) } ?? .none
            }
        }
        guard let decision else { return false }
        if let write = decision { try finishInPlace(write) }
        return true
    }

    /// Whether `sequence` has reached `durability`, from the log's counters alone.
    func hasReached(_ sequence: UInt64, _ durability: Durability) -> Bool {
        state.withLock { state in
            switch durability {
            case .buffered: state.pendingBytes <= configuration.maximumPendingBytes
            case .written: sequence <= state.writtenSequence
            case .durable: sequence <= state.durableSequence
            }
        }
    }

    /// Waits until every record up to `sequence` is written (or durable).
    /// For `written`, writes in place if nobody is writing (`LogCore+InPlace.swift`).
    func waitFor(_ sequence: UInt64, durable: Bool) async throws(OutboxLogError) {
        var inPlace: InPlaceWrite?
        try await park { state, continuation in
            if durable ? sequence <= state.durableSequence : sequence <= state.writtenSequence { return nil }
            if case .poisoned(let error) = state.phase { return .failure(.poisoned(by: error)) }
            if case .closed = state.phase { return .failure(.closed()) }
            if !durable, let write = takeInPlaceWrite(through: sequence, &state) {
                inPlace = write
                return nil
            }
            state.waiters.append(Waiter(sequence: sequence, durable: durable, continuation: continuation))
            return .success(state.claimWriterWakeup())
        }
        if let inPlace { try finishInPlace(inPlace) }
    }

    /// Waits until the writer has created segment `id` on disk (it was
    /// started by a roll), or the log fails.
    func waitUntilCreated(_ id: UInt32) async throws(OutboxLogError) {
        try await park { state, continuation in
            if state.slots[id]?.file != nil { return nil }
            if case .poisoned(let error) = state.phase { return .failure(.poisoned(by: error)) }
            if case .closed = state.phase { return .failure(.closed()) }
            state.creationWaiters.append(CreationWaiter(segment: id, continuation: continuation))
            state.flushRequested = true
            return .success(state.claimWriterWakeup())
        }
    }

    /// Suspends the caller until the writer resumes it. `register` runs
    /// under the lock and returns `nil` if there is nothing to wait for, a
    /// failure to throw at once, or — having kept the continuation for the
    /// writer to resume — whether the writer must be woken.
    func park(
        _ register: (inout LogState, UnsafeContinuation<Result<Void, OutboxLogError>, Never>) -> Result<Bool, OutboxLogError>?
    ) async throws(OutboxLogError) {
        let result = await withUnsafeContinuation {
            (continuation: UnsafeContinuation<Result<Void, OutboxLogError>, Never>) in
            switch state.withLock({ register(&$0, continuation) }) {
            case nil: continuation.resume(returning: .success(()))
            case .success(let wake): wakeWriter(wake)
            case .failure(let error): continuation.resume(returning: .failure(error))
            }
        }
        try result.get()
    }

    /// Writes (or syncs) everything appended so far.
    func flush(durable: Bool) async throws(OutboxLogError) {
        let last = try state.withLock { state throws(OutboxLogError) -> UInt64 in
            if let error = state.isAcceptingWrites { throw error }
            return state.nextSequence - 1
        }
        try await waitFor(last, durable: durable)
    }

    /// Rejects a bad batch before anything is encoded: nothing is written.
    /// Returns the batch's size in bytes.
    private func validate(_ writes: some Collection<LogWrite>) throws(OutboxLogError) -> Int {
        if configuration.readOnly { throw OutboxLogError(.invalidArgument, "the log was opened read-only") }
        if writes.isEmpty { throw OutboxLogError(.invalidArgument, "an append needs at least one record") }
        var batchBytes = 0
        for write in writes {
            if write.key.count > LogKey.maximumLength {
                throw OutboxLogError(
                    .invalidArgument, "key of \(write.key.count) bytes exceeds the maximum of \(LogKey.maximumLength)")
            }
            // The format reserves the empty key for markers (Docs/FORMAT.md).
            if write.key.count == 0 { throw OutboxLogError(.invalidArgument, "a record needs a key of at least 1 byte") }
            if write.kind == .tombstone && write.payloadCount != 0 {
                throw OutboxLogError(.invalidArgument, "a tombstone carries no payload")
            }
            if let expiresAt = write.expiresAt {
                if write.kind == .tombstone { throw OutboxLogError(.invalidArgument, "a tombstone carries no expiry") }
                if RecordExpiry.milliseconds(expiresAt) == nil {
                    throw OutboxLogError(.invalidArgument, "expiry \(expiresAt.timeIntervalSince1970) s since 1970 cannot be stored")
                }
            }
            if write.frameSize > configuration.maximumRecordSize {
                throw OutboxLogError(
                    .recordTooLarge,
                    "record of \(write.frameSize) bytes exceeds the maximum of \(configuration.maximumRecordSize)")
            }
            batchBytes += write.frameSize
        }
        if batchBytes > OutboxLog.Configuration.absoluteMaximumBatchSize {
            throw OutboxLogError(
                .invalidArgument,
                "a batch of \(writes.count) records and \(batchBytes) bytes exceeds the maximum of "
                    + "\(OutboxLog.Configuration.absoluteMaximumBatchSize) bytes per batch")
        }
        return batchBytes
    }

    /// Encodes a batch into the open chunk and indexes it. Either the whole
    /// batch is encoded or (on error) nothing is.
    private func encode(_ writes: some RandomAccessCollection<LogWrite>, into state: inout LogState) throws(OutboxLogError)
        -> UInt64
    {
        if let error = state.isAcceptingWrites { throw error }
        if writes.contains(where: { $0.kind == .annotation }) { try checkAnnotations(writes, in: state.index) }

        var total = 0
        for write in writes { total += write.frameSize }
        state.prepareActiveSegment(for: total, configuration: configuration)
        var sequence: UInt64 = 0
        let count = writes.count
        for (position, write) in writes.enumerated() {
            sequence = state.encodeFrame(
                FrameKind(write.kind), key: write.key, batchContinues: position < count - 1,
                batchContinuation: position > 0, expiry: write.expiryMilliseconds, payloadCount: write.payloadCount,
                appendPayload: { write.appendPayload(to: &$0) })
        }
        state.finishEncoding(configuration: configuration)
        return sequence
    }

    /// An annotation needs a live value: in the index, or earlier in the batch.
    private func checkAnnotations(_ writes: some Collection<LogWrite>, in index: LogIndex) throws(OutboxLogError) {
        var liveInBatch: [LogKey: Bool] = [:]
        for write in writes {
            switch write.kind {
            case .value: liveInBatch[write.key] = true
            case .tombstone: liveInBatch[write.key] = false
            case .annotation:
                let live = liveInBatch[write.key] ?? (index.entries[write.key] != nil)
                if !live {
                    throw OutboxLogError(.invalidArgument, "cannot annotate key \(write.key): it has no value")
                }
            }
        }
    }
}
