import OutboxLocking
import OutboxLog
import OutboxModel

/// Entries as records of an ``OutboxLog``, in a ``RecordFormat`` (plain, or
/// sealed under the app's key); payloads above the threshold in files
/// beside it (``PayloadFileStore``).
final class LogBackend: StoreBackend {
    let log: OutboxLog
    let format: RecordFormat
    let payloadFiles: PayloadFileStore
    /// The payload file of each live entry that has one: deleted once the
    /// record that ends the entry is durable.
    let ledger: PayloadFileLedger

    init(log: OutboxLog, format: RecordFormat, payloadFiles: PayloadFileStore, ledger: PayloadFileLedger) {
        self.log = log
        self.format = format
        self.payloadFiles = payloadFiles
        self.ledger = ledger
    }

    /// The size of the log record that holds an entry body of `bytes`
    /// bytes: what must fit the log's `maximumRecordSize`. Keys are 17 bytes
    /// in every format.
    static func frameSize(ofBody bytes: Int) -> Int { emptyEntryFrame + bytes }
    private static let emptyEntryFrame = LogWrite.value(LogKey([UInt8](repeating: 0, count: 17)), []).frameSize


    /// `body` as its record's value in `format` (a queue's, or a spool's: the same bytes).
    static func prepare(_ body: EntryBody, format: RecordFormat) throws(OutboxError) -> PreparedBody {
        let encoded = try format.storedBody(EntryCodec.encode(body), id: body.id)
        return PreparedBody(body: body, encoded: encoded, storedBytes: Self.storedBytes(record: encoded.count, file: body.payloadFile))
    }

    /// ``prepare(_:format:)``, and the reader of the body's payload file if it has one.
    func prepare(_ body: EntryBody) throws(OutboxError) -> PreparedBody {
        var prepared = try Self.prepare(body, format: format)
        prepared.body.largePayload = body.payloadFile.map { payloadFiles.handle($0, id: body.id) }
        return prepared
    }

    /// What an entry counts for in limits and summaries: its record, and its
    /// payload file if it has one.
    static func storedBytes(record: Int, file: PayloadFileReference?) -> Int { record + Int(file?.fileSize ?? 0) }

    func storeLargePayload(_ payload: [UInt8], for id: OutboxEntryID) async throws(OutboxError) -> PayloadFileReference? {
        let files = payloadFiles
        return try await offThePool { () throws(OutboxError) in try files.write(payload, for: id) }
    }

    /// Deletes files written for entries that were never recorded.
    func discardUnrecorded(_ files: [(PayloadFileReference, OutboxEntryID)]) async {
        let store = payloadFiles
        let paths = files.map { store.path(of: $0.0, id: $0.1) }
        _ = try? await offThePool { () throws(OutboxError) in try store.remove(paths) }
    }

    /// The entry `id`'s body record, about to be handed to the log, references `file`.
    private func record(_ file: PayloadFileReference, of id: OutboxEntryID) {
        ledger.recorded(payloadFiles.path(of: file, id: id), key: format.entryKey(id))
    }

    func reserveRoomNow(bytes: Int) -> StoreRoom? {
        log.reserveIfAvailable(bytes: bytes).map(StoreRoom.reserved)
    }

    func reserveRoom(bytes: Int) async throws(OutboxError) -> StoreRoom {
        do { return .reserved(try await log.reserve(bytes: bytes)) } catch { throw .storage(error) }
    }

    func submit(
        _ changes: StoreChanges, newBodies: [PreparedBody], scheduler: Scheduler, room: StoreRoom
    ) throws(OutboxError) -> StoreAcknowledgement {
        try submit(try writes(for: changes, newBodies: newBodies, scheduler: scheduler), room: room)
    }

    /// The log records of `changes`, in order.
    func writes(
        for changes: StoreChanges, newBodies: [PreparedBody], scheduler: Scheduler
    ) throws(OutboxError) -> [LogWrite] {
        var writes: [LogWrite] = []
        writes.reserveCapacity(changes.count)
        // By id, so a batch of n new entries costs O(n), not O(n²).
        let bodies = newBodies.count > 1
            ? Dictionary(newBodies.map { ($0.body.id, $0) }, uniquingKeysWith: { first, _ in first }) : [:]
        for change in changes {
            switch change {
            case .newEntry(let id):
                let body = newBodies.count > 1 ? bodies[id] : newBodies.first { $0.body.id == id }
                guard let body, let encoded = body.encoded, let metadata = scheduler.metadata(id) else { continue }
                writes.append(try bodyWrite(encoded, id: id, sequence: metadata.sequence))
                if let file = body.body.payloadFile { record(file, of: id) }
            case .state(let id):
                guard let metadata = scheduler.metadata(id) else { continue }
                let key = format.entryKey(id)
                let plain = EntryCodec.encodeState(metadata, failure: scheduler.failure(id))
                writes.append(.annotation(key, try format.storedState(plain, key: key)))
            case .remove(let id):
                writes.append(.tombstone(format.entryKey(id)))
            case .completion(let id):
                guard let completion = scheduler.completion(id) else { continue }
                writes.append(
                    .value(
                        format.completionKey(id),
                        try format.storedCompletion(EntryCodec.encodeCompletion(completion), id: id)))
            case .removeCompletion(let id):
                writes.append(.tombstone(format.completionKey(id)))
            }
        }
        return writes
    }

    func submitNewBody(_ body: PreparedBody, sequence: UInt64, room: StoreRoom) throws(OutboxError) -> StoreAcknowledgement {
        guard let encoded = body.encoded else { return .immediate }
        if let file = body.body.payloadFile { record(file, of: body.body.id) }
        return try submit([try bodyWrite(encoded, id: body.body.id, sequence: sequence)], room: room)
    }

    /// The value record of a new entry's body, its sequence number in place.
    /// The sequence is assigned under the store's lock, after the body was
    /// encoded (and sealed) outside it: the record is written from three
    /// parts — the body before the sequence, the sequence, the rest — so the
    /// body is copied once, into the log's buffer.
    private func bodyWrite(_ encoded: [UInt8], id: OutboxEntryID, sequence: UInt64) throws(OutboxError) -> LogWrite {
        let offset = format.sequenceOffset
        guard encoded.count >= offset + 8 else {
            throw OutboxError(.invalidArgument, "internal error: an encoded body of \(encoded.count) bytes has no sequence number")
        }
        let number = withUnsafeBytes(of: sequence.littleEndian) { Array($0) }
        return .value(format.entryKey(id), parts: [encoded[..<offset], number[...], encoded[(offset + 8)...]])
    }

    /// Hands `writes` to the log as one batch, in the room reserved for
    /// them (used up by the commit whatever its outcome; with no writes,
    /// given back when dropped).
    func submit(_ writes: [LogWrite], room: StoreRoom) throws(OutboxError) -> StoreAcknowledgement {
        guard !writes.isEmpty else { return .immediate }
        let ticket: LogTicket
        do throws(OutboxLogError) {
            switch room {
            case .reserved(let reservation): ticket = try reservation.commit(writes)
            case .unbounded: ticket = try log.submit(writes)
            }
        } catch { throw .storage(error) }
        ledger.remove(ledger.ended(by: writes), after: ticket, from: payloadFiles)
        return StoreAcknowledgement(ticket: ticket)
    }

    func bodies(of ids: [OutboxEntryID]) async throws(OutboxError) -> [EntryBody?] {
        let keys = ids.map(format.entryKey)
        let records: [LogEntry?]
        // The values alone: the claim that reads them has just annotated
        // the same keys, and those marks need not reach the file first.
        do { records = try await log.values(keys) } catch { throw .storage(error) }
        return try zip(keys, records).map { (key, record) throws(OutboxError) -> EntryBody? in
            guard let record else { return nil }
            var body = try EntryCodec.decode(try format.plainBody(record.value, key: key))
            body.largePayload = body.payloadFile.map { payloadFiles.handle($0, id: body.id) }
            return body
        }
    }

    func close() async throws(OutboxError) {
        await ledger.settle()
        do { try await log.close() } catch { throw .storage(error) }
    }
}
