import OutboxBenchSupport

/// One timed operation of a comparison, the same for every contender: the
/// enqueue is timed on its own, then (for `.enqueueThenAcknowledge`) the
/// acknowledgement of what it enqueued, as a second operation.
extension Operation {
    /// Times `enqueue`, then `acknowledge` of the id it returned if this
    /// operation acknowledges.
    func timed<ID>(
        enqueue: () async throws -> ID, acknowledge: (ID) async throws -> Void
    ) async rethrows -> OperationTimes {
        let start = monotonicNanoseconds()
        let id = try await enqueue()
        let enqueued = monotonicNanoseconds()
        guard case .enqueueThenAcknowledge = self else { return OperationTimes(enqueued - start) }
        try await acknowledge(id)
        return OperationTimes(enqueued - start, monotonicNanoseconds() - enqueued)
    }

    /// `timed(enqueue:acknowledge:)` for blocking calls, on a thread of their own.
    func timedBlocking<ID>(enqueue: () throws -> ID, acknowledge: (ID) throws -> Void) rethrows -> OperationTimes {
        let start = monotonicNanoseconds()
        let id = try enqueue()
        let enqueued = monotonicNanoseconds()
        guard case .enqueueThenAcknowledge = self else { return OperationTimes(enqueued - start) }
        try acknowledge(id)
        return OperationTimes(enqueued - start, monotonicNanoseconds() - enqueued)
    }
}
