import Foundation
import OutboxLog
import SystemPackage

/// An ``OutboxStore`` on ``OutboxLog``: each user's queue in its own log
/// directory, `<root>/partitions/<user>/`.
///
/// An entry's body (request, payload, scheduling fields) is one value record,
/// written once at enqueue; each status change is a small annotation record
/// beside it; success or discard writes a tombstone, and success also writes
/// the entry's completion (its server id: the mapping for `local:<id>`) in the
/// same atomic batch. Memory holds each entry's scheduling metadata only;
/// bodies are read from disk when an entry is sent or listed.
///
/// Reopening rebuilds exactly the state that was acknowledged; entries a
/// crash left in flight come back `pending`, with that attempt counted.
public final class LogOutboxStore: OutboxStore {
    let core: StoreCore
    let log: OutboxLog

    public var partition: String { core.partition }

    /// What the log's open found (torn tail cut, damage salvaged, …).
    public var recoveryReport: RecoveryReport { log.recoveryReport }

    private init(core: StoreCore, log: OutboxLog) {
        self.core = core
        self.log = log
    }

    /// Opens (creating if needed) the queue of `partition` under `root`.
    /// The log's open creates `root`, `root/partitions` and any missing
    /// directory above them (mode 0700), on the log's own threads.
    ///
    /// A relative `root` is relative to the current directory. If the open
    /// fails, the directories it created are removed again.
    ///
    /// - Throws: ``OutboxError`` — `.wrongKey` if the configured encryption
    ///   key does not open this partition's data, `.keyRequired` if the data
    ///   is encrypted and no key was given (nothing is modified in either
    ///   case), `.invalidArgument` for a configuration value out of range
    ///   (see ``OutboxLimits``), `.storage` for the log's errors (locked,
    ///   corruption, I/O).
    public static func open(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration = OutboxStoreConfiguration(),
        now: Date = Date()
    ) async throws(OutboxError) -> LogOutboxStore {
        guard !partition.isEmpty else { throw OutboxError(.invalidArgument, "the partition (user) name is empty") }
        try Admission.check(configuration)
        let openedAt = try Admission.milliseconds(now, "now")
        let directory = PartitionDirectory.path(root: root, partition: partition)
        let created = CreatedDirectories(
            [root, root.appending("partitions"), directory], fileSystem: configuration.log.fileSystem)
        let log: OutboxLog
        do { log = try await OutboxLog.open(at: directory, configuration: configuration.log) } catch {
            created.removeIfEmpty()
            throw .storage(error)
        }
        do {
            let sealer = configuration.encryptionKey.map(PayloadSealer.init(key:))
            try await checkKey(log, sealer: sealer, partition: partition)
            let backend = LogBackend(log: log, sealer: sealer)
            var scheduler = Scheduler(partition: partition, configuration: configuration)
            try await load(log, into: &scheduler, partition: partition)
            let changes = scheduler.finishLoading(now: openedAt, sequenceFloor: log.statistics.nextSequence)
            let core = StoreCore(partition: partition, configuration: configuration, backend: backend, scheduler: scheduler)
            try await core.persistLoadingChanges(changes)
            return LogOutboxStore(core: core, log: log)
        } catch {
            try? await log.close()
            // A queue this open created holds nothing anyone wrote: delete it.
            if created.isNew(directory) {
                try? await OutboxLog.destroy(at: directory, fileSystem: configuration.log.fileSystem)
            }
            created.removeIfEmpty()
            throw error
        }
    }

    /// Deletes `partition`'s queue under `root`, for logout. Fails with
    /// ``OutboxError/Code/busy`` (deleting nothing) while a store has it open.
    public static func purge(
        root: FilePath, partition: String, fileSystem: any FileSystem = PosixFileSystem()
    ) async throws(OutboxError) {
        do {
            try await OutboxLog.destroy(
                at: PartitionDirectory.path(root: root, partition: partition), fileSystem: fileSystem)
        } catch where error.code == .locked {
            throw OutboxError(.busy, "the queue of \(partition) is open; close it first", storage: error)
        } catch {
            throw .storage(error)
        }
    }

    /// The partitions (users) that have a queue under `root`.
    public static func partitions(root: FilePath, fileSystem: any FileSystem = PosixFileSystem()) -> [String] {
        PartitionDirectory.list(root: root, fileSystem: fileSystem)
    }

    // MARK: Loading

    private static func checkKey(_ log: OutboxLog, sealer: PayloadSealer?, partition: String) async throws(OutboxError) {
        let canary: LogEntry?
        do { canary = try await log.get(LogBackend.canaryKey) } catch { throw .storage(error) }
        switch (canary, sealer) {
        case (let canary?, let sealer?):
            guard sealer.checkCanary(canary.value, partition: partition) else {
                throw OutboxError(.wrongKey, "the encryption key does not open the queue of \(partition); nothing was changed")
            }
        case (.some, nil):
            throw OutboxError(.keyRequired, "the queue of \(partition) is encrypted; open it with its key")
        case (nil, let sealer?):
            do {
                try await log.put(LogBackend.canaryKey, try sealer.sealCanary(partition: partition), durability: .durable)
            } catch let error as OutboxLogError {
                throw .storage(error)
            } catch let error as OutboxError {
                throw error
            } catch {
                throw OutboxError(.invalidArgument, "\(error)")
            }
        case (nil, nil):
            break
        }
    }

    private static func load(_ log: OutboxLog, into scheduler: inout Scheduler, partition: String) async throws(OutboxError) {
        var after: UInt64 = 0
        while true {
            let page: [LogEntry]
            do { page = try await log.entries(after: after, limit: 4096) } catch { throw .storage(error) }
            guard let last = page.last else { return }
            after = last.sequence
            for record in page {
                let key = record.key.bytes
                switch key.first {
                case LogBackend.entryPrefix where key.count == 17:
                    let header = try EntryCodec.decodeHeader(record.value)
                    let body = header.body
                    guard body.partition == partition else {
                        throw OutboxError(.corruptEntry, "an entry of partition \(body.partition) in \(partition)'s queue", entry: body.id)
                    }
                    var metadata = EntryMetadata(
                        id: body.id, sequence: body.sequence, status: .pending, priority: body.priority, attempts: 0,
                        maxAttempts: body.maxAttempts, scope: scheduler.intern(body.scope),
                        type: scheduler.intern(body.type), coalescing: scheduler.intern(body.coalescingKey),
                        when: EntryMetadata.immediately, createdAt: body.createdAt, storedBytes: UInt32(clamping: record.value.count),
                        dependencies: body.dependencies.isEmpty ? nil : body.dependencies)
                    var failure: FailureInfo?
                    if let annotation = record.annotation {
                        let state = try EntryCodec.decodeState(annotation.payload)
                        metadata.status = state.status
                        metadata.attempts = state.attempts
                        metadata.when = state.when
                        failure = state.failure
                    }
                    scheduler.load(
                        metadata, failure: failure, unchanged: record.annotation == nil,
                        appKey: body.keySuppliedByApp ? body.idempotencyKey : nil)
                case LogBackend.completionPrefix where key.count == 17:
                    scheduler.loadCompletion(OutboxEntryID(bytes: key.dropFirst()), try EntryCodec.decodeCompletion(record.value))
                default:
                    continue  // the key-check record
                }
            }
        }
    }

    // MARK: OutboxStore

    public func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        try await core.enqueue(request)
    }
    public func dueEntries(at now: Date, limit: Int) async throws(OutboxError) -> [OutboxEntry] {
        try await core.dueEntries(at: now, limit: limit)
    }
    public func claimDue(
        at now: Date, limit: Int, lease: Duration, accepting: (String) -> Bool
    ) async throws(OutboxError) -> OutboxClaim {
        try await core.claimDue(at: now, limit: limit, lease: lease, accepting: accepting)
    }
    public func nextDueDate() async throws(OutboxError) -> Date? { try await core.nextDueDate() }
    public func beginAttempt(_ id: OutboxEntry.ID, at now: Date, lease: Duration) async throws(OutboxError) -> OutboxEntry {
        try await core.beginAttempt(id, at: now, lease: lease)
    }
    public func recordSuccess(_ id: OutboxEntry.ID, serverID: String?, at now: Date) async throws(OutboxError) {
        try await core.recordSuccess(id, serverID: serverID, at: now)
    }
    public func recordFailure(
        _ id: OutboxEntry.ID, error: String, httpStatus: Int?, retryAt: Date
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await core.recordFailure(id, error: error, httpStatus: httpStatus, retryAt: retryAt)
    }
    public func recordFailure(
        _ id: OutboxEntry.ID, error: String, httpStatus: Int?, retryAt: Date, countsAsAttempt: Bool,
        serverAnsweredAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await core.recordFailure(
            id, error: error, httpStatus: httpStatus, retryAt: retryAt, countsAsAttempt: countsAsAttempt,
            serverAnsweredAt: serverAnsweredAt)
    }
    public func recordFailure(
        _ id: OutboxEntry.ID, error: String, httpStatus: Int?, retryAt: Date, countsAsAttempt: Bool,
        serverAnsweredAt: Date?, outcomeUnknownAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await core.recordFailure(
            id, error: error, httpStatus: httpStatus, retryAt: retryAt, countsAsAttempt: countsAsAttempt,
            serverAnsweredAt: serverAnsweredAt, outcomeUnknownAt: outcomeUnknownAt)
    }
    public func reclaimExpiredLeases(at now: Date) async throws(OutboxError) -> [OutboxEntry.ID] {
        try await core.reclaimExpiredLeases(at: now)
    }
    public func quarantine(_ id: OutboxEntry.ID, reason: String, httpStatus: Int?) async throws(OutboxError) -> OutboxCascade {
        try await core.quarantine(id, reason: reason, httpStatus: httpStatus)
    }
    public func markConflict(_ id: OutboxEntry.ID, reason: String, httpStatus: Int?) async throws(OutboxError) {
        try await core.markConflict(id, reason: reason, httpStatus: httpStatus)
    }
    public func retry(_ id: OutboxEntry.ID, at now: Date) async throws(OutboxError) -> OutboxCascade {
        try await core.retry(id, at: now)
    }
    public func discard(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCascade { try await core.discard(id) }
    public func entry(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntry? { try await core.entry(id) }
    public func entries(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry] {
        try await core.entries(matching: filter)
    }
    public func summary() async throws(OutboxError) -> OutboxSummary { try core.summary() }
    public func dependents(of id: OutboxEntry.ID) async throws(OutboxError) -> [OutboxEntry.ID] {
        try core.dependents(of: id)
    }
    public func completion(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCompletion? {
        try core.completion(of: id)
    }
    public func clear() async throws(OutboxError) { try await core.clear() }
    public func prune(at now: Date) async throws(OutboxError) { try await core.prune(at: now) }
    public func close() async throws(OutboxError) { try await core.close() }
}

/// Entries as records of an ``OutboxLog``.
final class LogBackend: StoreBackend {
    static let entryPrefix: UInt8 = 0x45  // "E" + 16-byte id: body (value) and state (annotation)
    static let completionPrefix: UInt8 = 0x43  // "C" + 16-byte id: the completion
    static let canaryKey: LogKey = "K"  // the encryption key check
    /// Where the sequence number sits in an encoded body (after version, flags and id).
    static let sequenceOffset = 18

    let log: OutboxLog
    let sealer: PayloadSealer?

    init(log: OutboxLog, sealer: PayloadSealer?) {
        self.log = log
        self.sealer = sealer
    }

    static func entryKey(_ id: OutboxEntryID) -> LogKey { LogKey([entryPrefix] + id.bytes) }

    /// The size of the log record that holds an entry body of `bytes`
    /// bytes: what must fit the log's `maximumRecordSize`.
    static func frameSize(ofBody bytes: Int) -> Int { emptyEntryFrame + bytes }
    private static let emptyEntryFrame = LogWrite.value(entryKey(OutboxEntryID(bytes: [UInt8](repeating: 0, count: 16))), []).frameSize
    static func completionKey(_ id: OutboxEntryID) -> LogKey { LogKey([completionPrefix] + id.bytes) }

    func prepare(_ body: EntryBody) throws(OutboxError) -> PreparedBody {
        let encoded = try EntryCodec.encode(body, sealer: sealer)
        return PreparedBody(body: body, encoded: encoded, storedBytes: encoded.count)
    }

    func reserveRoom(bytes: Int) async throws(OutboxError) -> StoreRoom {
        do { return StoreRoom(reservation: try await log.reserveRoom(bytes: bytes)) } catch { throw .storage(error) }
    }

    func submit(
        _ changes: [StoreChange], newBody: PreparedBody?, scheduler: Scheduler, room: StoreRoom
    ) throws(OutboxError) -> StoreAcknowledgement {
        var writes: [LogWrite] = []
        writes.reserveCapacity(changes.count)
        for change in changes {
            switch change {
            case .newEntry(let id):
                guard var encoded = newBody?.encoded, let metadata = scheduler.metadata(id) else { continue }
                withUnsafeBytes(of: metadata.sequence.littleEndian) { sequence in
                    for index in 0..<8 { encoded[Self.sequenceOffset + index] = sequence[index] }
                }
                writes.append(.value(Self.entryKey(id), encoded))
            case .state(let id):
                guard let metadata = scheduler.metadata(id) else { continue }
                writes.append(
                    .annotation(Self.entryKey(id), EntryCodec.encodeState(metadata, failure: scheduler.failure(id))))
            case .remove(let id):
                writes.append(.tombstone(Self.entryKey(id)))
            case .completion(let id):
                guard let completion = scheduler.completion(id) else { continue }
                writes.append(.value(Self.completionKey(id), EntryCodec.encodeCompletion(completion)))
            case .removeCompletion(let id):
                writes.append(.tombstone(Self.completionKey(id)))
            }
        }
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
        let records: [LogEntry?]
        do { records = try await log.get(ids.map(Self.entryKey)) } catch { throw .storage(error) }
        return try records.map { (record) throws(OutboxError) -> EntryBody? in
            guard let record else { return nil }
            return try EntryCodec.decode(record.value, sealer: sealer)
        }
    }

    func close() async throws(OutboxError) {
        do { try await log.close() } catch { throw .storage(error) }
    }
}
