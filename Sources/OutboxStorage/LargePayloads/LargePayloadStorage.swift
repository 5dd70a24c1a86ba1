import OutboxModel
/// Backends that keep every payload inline (the in-memory store) write no
/// files.
extension StoreBackend {
    func storeLargePayload(_ payload: [UInt8], for id: OutboxEntryID) async throws(OutboxError) -> PayloadFileReference? { nil }
    func discardUnrecorded(_ files: [(PayloadFileReference, OutboxEntryID)]) async {}
}

extension StoreCore {
    /// The new entry's body, prepared: a payload above the threshold is
    /// first written to its file (durably, off the cooperative pool), so
    /// that the entry which references it is written after it.
    func prepareBodyStoringPayload(_ request: OutboxEnqueueRequest, now: Int64) async throws(OutboxError) -> PreparedBody {
        guard Admission.goesToFile(request.payload.count, configuration),
            let file = try await backend.storeLargePayload(request.payload, for: request.id)
        else { return try prepareBody(request, now: now) }
        var inFile = request
        inFile.payload = []
        do { return try prepareBody(inFile, now: now, payloadFile: file) } catch {
            await backend.discardUnrecorded([(file, request.id)])
            throw error
        }
    }

    /// After a refused change (not a storage failure, which leaves the
    /// store to a reopen that removes orphaned files): the files written
    /// for `bodies` are deleted. After a storage failure they are kept,
    /// since their record may have reached the log.
    func discardFiles(of bodies: [PreparedBody], after error: OutboxError) async {
        guard error.code != .storage else { return }
        await discardUnrecordedFiles(of: bodies)
    }

    /// Deletes the files written for `bodies`, none of which was recorded
    /// (duplicates).
    func discardUnrecordedFiles(of bodies: [PreparedBody]) async {
        let files = bodies.compactMap { prepared in prepared.body.payloadFile.map { ($0, prepared.body.id) } }
        if !files.isEmpty { await backend.discardUnrecorded(files) }
    }
}
