import OutboxLog

/// Entries as records of an ``OutboxLog``, in a ``RecordFormat`` (plain, or
/// sealed under the app's key).
final class LogBackend: StoreBackend {
    let log: OutboxLog
    let format: RecordFormat

    init(log: OutboxLog, format: RecordFormat) {
        self.log = log
        self.format = format
    }

    /// The size of the log record that holds an entry body of `bytes`
    /// bytes: what must fit the log's `maximumRecordSize`. Keys are 17 bytes
    /// in every format.
    static func frameSize(ofBody bytes: Int) -> Int { emptyEntryFrame + bytes }
    private static let emptyEntryFrame = LogWrite.value(LogKey([UInt8](repeating: 0, count: 17)), []).frameSize

    func prepare(_ body: EntryBody) throws(OutboxError) -> PreparedBody { try Self.prepare(body, format: format) }

    /// `body` as its record's value in `format` (a queue's, or a spool's: the same bytes).
    static func prepare(_ body: EntryBody, format: RecordFormat) throws(OutboxError) -> PreparedBody {
        let encoded = try format.storedBody(try EntryCodec.encode(body, sealer: nil), id: body.id)
        return PreparedBody(body: body, encoded: encoded, storedBytes: encoded.count)
    }

    func reserveRoom(bytes: Int) async throws(OutboxError) -> StoreRoom {
        do { return StoreRoom(reservation: try await log.reserveRoom(bytes: bytes)) } catch { throw .storage(error) }
    }

    func submit(
        _ changes: [StoreChange], newBodies: [PreparedBody], scheduler: Scheduler, room: StoreRoom
    ) throws(OutboxError) -> StoreAcknowledgement {
        try submit(try writes(for: changes, newBodies: newBodies, scheduler: scheduler), room: room)
    }

    /// The log records of `changes`, in order.
    func writes(
        for changes: [StoreChange], newBodies: [PreparedBody], scheduler: Scheduler
    ) throws(OutboxError) -> [LogWrite] {
        var writes: [LogWrite] = []
        writes.reserveCapacity(changes.count)
        for change in changes {
            switch change {
            case .newEntry(let id):
                guard var encoded = newBodies.first(where: { $0.body.id == id })?.encoded, let metadata = scheduler.metadata(id) else { continue }
                let offset = format.sequenceOffset
                withUnsafeBytes(of: metadata.sequence.littleEndian) { sequence in
                    for index in 0..<8 { encoded[offset + index] = sequence[index] }
                }
                writes.append(.value(format.entryKey(id), encoded))
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

    /// Hands `writes` to the log as one batch, in the room reserved for them.
    func submit(_ writes: [LogWrite], room: StoreRoom) throws(OutboxError) -> StoreAcknowledgement {
        guard !writes.isEmpty else { return .immediate }
        let ticket: LogTicket
        do throws(OutboxLogError) {
            if let reservation = room.reservation {
                ticket = try log.submit(writes, using: reservation)
            } else {
                ticket = try log.submit(writes)
            }
        } catch { throw .storage(error) }
        return StoreAcknowledgement { durability throws(OutboxError) in
            do throws(OutboxLogError) { try await ticket.wait(for: durability) } catch { throw .storage(error) }
        }
    }

    func bodies(of ids: [OutboxEntryID]) async throws(OutboxError) -> [EntryBody?] {
        let keys = ids.map(format.entryKey)
        let records: [LogEntry?]
        do { records = try await log.get(keys) } catch { throw .storage(error) }
        return try zip(keys, records).map { (key, record) throws(OutboxError) -> EntryBody? in
            guard let record else { return nil }
            return try EntryCodec.decode(try format.plainBody(record.value, key: key), sealer: format.payloadSealer)
        }
    }

    func close() async throws(OutboxError) {
        do { try await log.close() } catch { throw .storage(error) }
    }
}
