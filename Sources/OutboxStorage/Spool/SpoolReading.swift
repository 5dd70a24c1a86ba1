import Crypto
import OutboxLog
import SystemPackage
import OutboxModel

/// One spool the owner has locked and read, with the records its queue
/// does not hold yet. Its log is closed once read: a look at thousands of
/// spools holds one descriptor for each (its guard), not a log's several.
struct OpenSpool: Sendable {
    let id: SpoolID
    /// The spools' directory it is in.
    let source: SpoolSource
    /// The spool's guard (``SpoolLayout/guardPath(_:_:)``), held by the owner.
    let guardLock: FileDescriptor
    /// Records past the queue's mark, in spool order.
    var records: [SpooledRecord]
    /// The queue has a mark for this spool (to delete with it).
    var marked: Bool

    var path: FilePath { SpoolLayout.path(source.directory, id) }
}

/// Opening and reading a spool, for ingestion.
package enum SpoolReading {
    enum Opened {
        case spool(OpenSpool)
        /// Its writer still holds it.
        case busy
        /// Gone since the listing.
        case gone
        /// Cannot be opened or read: kept as is; why.
        case unusable(OutboxSpoolProblem)
    }

    /// Locks and reads the spool `id` of `source`: the records past the
    /// queue's mark for it (read from `queue`), entries re-encoded in
    /// `queueFormat` if the spool is in another.
    static func open(
        _ id: SpoolID, in source: SpoolSource, queue: OutboxLog, queueFormat: RecordFormat,
        configuration: OutboxLog.Configuration
    ) async -> Opened {
        var logConfiguration = configuration
        logConfiguration.createIfMissing = false
        logConfiguration.automaticCompactionRatio = nil
        let spools = source.directory
        let path = SpoolLayout.path(spools, id)
        let fileSystem = configuration.fileSystem
        // Its writer holds the guard from before the directory existed until
        // the spool is closed: while it does, the spool is not ours.
        let taken: FileDescriptor?
        do {
            taken = try await offThePool { () throws(OutboxError) -> FileDescriptor? in
                try SpoolLayout.takeGuard(spools, id, fileSystem: fileSystem)
            }
        } catch {
            return .unusable(OutboxSpoolProblem(.unusable, path: path, error: error))
        }
        guard let guardLock = taken else { return .busy }
        let log: OutboxLog
        do { log = try await OutboxLog.open(at: path, configuration: logConfiguration) } catch {
            try? fileSystem.close(guardLock)
            switch error.code {
            case .locked: return .busy
            case .notFound: return .gone
            default: return .unusable(OutboxSpoolProblem(.unusable, path: path, error: .storage(error)))
            }
        }
        do throws(OutboxError) {
            try await LogOutboxStore.checkKey(log, key: source.key, partition: source.format.partition, writing: false)
            let mark: UInt64?
            do { mark = try await queue.get(SpoolMark.key(id)).flatMap { SpoolMark.sequence($0.value) } } catch {
                throw .storage(error)
            }
            var spool = OpenSpool(id: id, source: source, guardLock: guardLock, records: [], marked: mark != nil)
            try await read(&spool, from: log, after: mark ?? 0, queueFormat: queueFormat)
            do { try await log.close() } catch { throw .storage(error) }
            return .spool(spool)
        } catch {
            try? await log.close()
            try? fileSystem.close(guardLock)
            return .unusable(OutboxSpoolProblem(.unusable, path: path, error: error))
        }
    }

    /// The entry a spool's record (`key`, `value`, in the spool's `format`)
    /// holds, and its stored form in the queue: the record's own value, or
    /// re-encoded in `queueFormat` if the queue has another. Throws if it is
    /// not an entry of this queue.
    package static func entry(
        key: LogKey, value: [UInt8], format: RecordFormat, queueFormat: RecordFormat?
    ) throws(OutboxError) -> (body: EntryBody, stored: [UInt8]) {
        let body = try EntryCodec.decode(try format.plainBody(value, key: key))
        guard body.partition == format.partition, format.entryKey(body.id) == key else {
            throw OutboxError(.corruptEntry, "a spooled entry of another queue", entry: body.id)
        }
        guard let queueFormat else { return (body, value) }
        return (body, try LogBackend.prepare(body, format: queueFormat).encoded ?? value)
    }

    /// Reads the entry records after `mark`. One that does not decode as
    /// an entry of this queue is kept as unreadable (to be set aside); the
    /// rest of the spool reads on.
    private static func read(
        _ spool: inout OpenSpool, from log: OutboxLog, after mark: UInt64, queueFormat: RecordFormat
    ) async throws(OutboxError) {
        var after = mark
        let format = spool.source.format
        while true {
            let page: [LogEntry]
            do { page = try await log.entries(after: after, limit: 4096) } catch { throw .storage(error) }
            guard let last = page.last else { return }
            after = last.sequence
            for record in page where record.key.bytes.first == RecordFormat.entryPrefix {
                do throws(OutboxError) {
                    let (body, stored) = try entry(
                        key: record.key, value: record.value, format: format,
                        queueFormat: spool.source.inQueueFormat ? nil : queueFormat)
                    spool.records.append(.entry(SpooledEntry(spool: spool.id, sequence: record.sequence, body: body, stored: stored)))
                } catch {
                    spool.records.append(
                        .unreadable(
                            UnreadableSpoolRecord(
                                spool: spool.id, sequence: record.sequence, key: record.key, stored: record.value, error: error)))
                }
            }
        }
    }
}
