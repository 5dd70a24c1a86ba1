import Crypto
import Foundation
import OutboxLog
import SystemPackage

/// An ``OutboxStore`` on `OutboxLog`: each user's queue in its own log
/// directory, `<root>/partitions/outbox+<keyed hash of the user>/` (Docs/SECURITY.md).
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
    /// Moves in what other processes spooled for this queue (Docs/OUTBOX.md).
    let spools: SpoolIngestor

    public var partition: String { core.partition }

    /// What the log's open found (torn tail cut, damage salvaged, …).
    public var recoveryReport: RecoveryReport { log.recoveryReport }

    /// What moving in the spools found at the open.
    public let spoolReportAtOpen: OutboxSpoolReport

    private init(core: StoreCore, log: OutboxLog, spools: SpoolIngestor, spoolReportAtOpen: OutboxSpoolReport) {
        self.core = core
        self.log = log
        self.spools = spools
        self.spoolReportAtOpen = spoolReportAtOpen
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
        let fileSystem = configuration.log.fileSystem
        let created = CreatedDirectories([root, PartitionDirectory.partitionsDirectory(root)], fileSystem: fileSystem)
        let directory: FilePath
        do { directory = try await queueDirectory(root: root, partition: partition, configuration: configuration) } catch {
            undoCreation(created, root: root, fileSystem: fileSystem)
            throw error
        }
        let queueCreated = CreatedDirectories([directory], fileSystem: fileSystem)
        let isNew = queueCreated.isNew(directory)
        let log: OutboxLog
        do { log = try await OutboxLog.open(at: directory, configuration: configuration.log) } catch {
            // Locked: another open holds the queue, so the root is in use —
            // found missing by both, created by whichever came first: its
            // salt names the queue. Undo nothing.
            if error.code != .locked {
                queueCreated.removeIfEmpty()
                undoCreation(created, root: root, fileSystem: fileSystem)
            }
            throw .storage(error)
        }
        do {
            let key = configuration.encryptionKey
            try await checkKey(log, key: key, partition: partition, writing: true)
            try await offThePool { () throws(OutboxError) in
                try PartitionDirectory.writeName(partition, directory: directory, key: key, fileSystem: fileSystem)
                if fileSystem is PosixFileSystem {
                    ApplePlatformProtection.apply(to: root)
                    ApplePlatformProtection.apply(to: directory)
                }
            }
            let format = RecordFormat(partition: partition, key: key)
            var scheduler = Scheduler(partition: partition, configuration: configuration)
            let floor = try await load(log, into: &scheduler, format: format)
            let changes = scheduler.finishLoading(
                now: openedAt, sequenceFloor: max(floor, log.statistics.nextSequence))
            let backend = LogBackend(log: log, format: format)
            let core = StoreCore(partition: partition, configuration: configuration, backend: backend, scheduler: scheduler)
            try await core.persistLoadingChanges(changes)
            let spools = SpoolIngestor(queue: directory, format: format, configuration: configuration, core: core, log: log)
            let spooled = try await spools.ingest()
            return LogOutboxStore(core: core, log: log, spools: spools, spoolReportAtOpen: spooled)
        } catch {
            try? await log.close()
            // A queue this open created holds nothing anyone wrote: delete it.
            if isNew { try? await OutboxLog.destroy(at: directory, fileSystem: fileSystem) }
            undoCreation(created, root: root, fileSystem: fileSystem)
            throw error
        }
    }

    /// Deletes `partition`'s queue under `root`, and what other processes
    /// spooled for it, for logout. Fails with ``OutboxError/Code/busy``
    /// (deleting nothing) while a store has it open; after deleting the
    /// queue, with `.busy` too if a process is writing a spool for it at
    /// that moment (purge again to delete the spools).
    ///
    /// An encrypted queue's directory is named by its key: pass the key.
    /// Without one, where no plain queue of `partition` exists but the root
    /// holds encrypted queues, this fails with ``OutboxError/Code/keyRequired``
    /// rather than return as if it had deleted something.
    public static func purge(
        root: FilePath, partition: String, encryptionKey: SymmetricKey? = nil,
        fileSystem: any FileSystem = PosixFileSystem()
    ) async throws(OutboxError) {
        let (directories, sealedQueues, named) = try await offThePool { () throws(OutboxError) -> ([FilePath], Bool, FilePath?) in
            var directories = [PartitionDirectory.legacyPath(root: root, partition: partition)]
            var named: FilePath?
            if let naming = try PartitionDirectory.naming(root: root, key: encryptionKey, fileSystem: fileSystem, create: false) {
                named = PartitionDirectory.path(root: root, name: PartitionDirectory.name(partition, naming: naming))
                directories.append(named!)
            }
            directories = directories.filter { (try? fileSystem.itemKind(at: $0)) == .directory }
            return (
                directories, encryptionKey == nil && PartitionDirectory.holdsSealedQueues(root: root, fileSystem: fileSystem),
                named
            )
        }
        if directories.isEmpty, sealedQueues {
            throw OutboxError(
                .keyRequired, "no plain queue of \(partition) under \(root), whose queues are encrypted: pass the key to purge")
        }
        for directory in directories {
            do {
                try await OutboxLog.destroy(at: directory, fileSystem: fileSystem)
            } catch where error.code == .locked {
                throw OutboxError(.busy, "the queue of \(partition) is open; close it first", storage: error)
            } catch {
                throw .storage(error)
            }
        }
        // Then what other processes spooled for it (also when the queue was
        // purged before and a spool was still being written then).
        if let named { try await SpoolLayout.purge(ofQueue: named, fileSystem: fileSystem) }
    }

    /// Deletes `partition`'s queue under `root`, with the key and file system
    /// of `configuration`; see ``purge(root:partition:encryptionKey:fileSystem:)``.
    public static func purge(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) {
        try await purge(
            root: root, partition: partition, encryptionKey: configuration.encryptionKey,
            fileSystem: configuration.log.fileSystem)
    }

    /// The partitions (users) that have a queue under `root` and that this
    /// caller can name: without a key, the unencrypted queues; with
    /// `encryptionKey`, the queues sealed under it. Reads one small file per
    /// queue; opens no queue.
    public static func partitions(
        root: FilePath, encryptionKey: SymmetricKey? = nil, fileSystem: any FileSystem = PosixFileSystem()
    ) -> [String] {
        PartitionDirectory.list(root: root, key: encryptionKey, fileSystem: fileSystem)
    }

    /// Whether some queue under `root` is encrypted: listing without a key
    /// shows none of them. Reads one small file per queue.
    public static func holdsEncryptedQueues(root: FilePath, fileSystem: any FileSystem = PosixFileSystem()) -> Bool {
        PartitionDirectory.holdsSealedQueues(root: root, fileSystem: fileSystem)
    }

    /// The partitions under `root` that `configuration`'s key (or its
    /// absence) can name; see ``partitions(root:encryptionKey:fileSystem:)``.
    public static func partitions(root: FilePath, configuration: OutboxStoreConfiguration) -> [String] {
        partitions(root: root, encryptionKey: configuration.encryptionKey, fileSystem: configuration.log.fileSystem)
    }

    // MARK: Loading

    /// Checks `key` against the queue's key-check record; writes one for a
    /// new sealed queue if `writing`.
    static func checkKey(
        _ log: OutboxLog, key: SymmetricKey?, partition: String, writing: Bool
    ) async throws(OutboxError) {
        let sealer = key.map(PayloadSealer.init(key:))
        let canary: LogEntry?
        do { canary = try await log.get(RecordFormat.canaryKey) } catch { throw .storage(error) }
        switch (canary, sealer) {
        case (let canary?, let sealer?):
            guard sealer.checkCanary(canary.value, partition: partition) else {
                throw OutboxError(.wrongKey, "the encryption key does not open the queue of \(partition); nothing was changed")
            }
        case (.some, nil):
            throw OutboxError(.keyRequired, "the queue of \(partition) is encrypted; open it with its key")
        case (nil, let sealer?) where writing:
            do {
                try await log.put(RecordFormat.canaryKey, try sealer.sealCanary(partition: partition), durability: .durable)
            } catch let error as OutboxLogError {
                throw .storage(error)
            } catch let error as OutboxError {
                throw error
            } catch {
                throw OutboxError(.invalidArgument, "\(error)")
            }
        case (nil, _):
            break
        }
    }

    /// Loads every entry and completion into `scheduler`; returns the
    /// sequence floor a rewrite carried over (0 if none).
    private static func load(
        _ log: OutboxLog, into scheduler: inout Scheduler, format: RecordFormat
    ) async throws(OutboxError) -> UInt64 {
        var after: UInt64 = 0
        var floor: UInt64 = 0
        while true {
            let page: [LogEntry]
            do { page = try await log.entries(after: after, limit: 4096) } catch { throw .storage(error) }
            guard let last = page.last else { return floor }
            after = last.sequence
            for record in page {
                let key = record.key
                switch key.bytes.first {
                case RecordFormat.entryPrefix where key.count == 17:
                    let header = try EntryCodec.decodeHeader(try format.plainBody(record.value, key: key))
                    let body = header.body
                    guard body.partition == format.partition else {
                        throw OutboxError(.corruptEntry, "an entry of another partition in \(format.partition)'s queue", entry: body.id)
                    }
                    var metadata = EntryMetadata(
                        id: body.id, sequence: body.sequence, status: .pending, priority: body.priority, attempts: 0,
                        maxAttempts: body.maxAttempts, scope: scheduler.intern(body.scope),
                        type: scheduler.intern(body.type), coalescing: scheduler.intern(body.coalescingKey),
                        when: EntryMetadata.immediately, createdAt: body.createdAt, storedBytes: UInt32(clamping: record.value.count),
                        dependencies: body.dependencies.isEmpty ? nil : body.dependencies)
                    var failure: FailureInfo?
                    if let annotation = record.annotation {
                        let state = try EntryCodec.decodeState(try format.plainState(annotation.payload, key: key))
                        metadata.status = state.status
                        metadata.attempts = state.attempts
                        metadata.when = state.when
                        failure = state.failure
                    }
                    scheduler.load(
                        metadata, failure: failure, unchanged: record.annotation == nil,
                        appKey: body.keySuppliedByApp ? body.idempotencyKey : nil)
                case RecordFormat.completionPrefix where key.count == 17:
                    let (id, plain) = try format.plainCompletion(record.value, key: key)
                    scheduler.loadCompletion(id, try EntryCodec.decodeCompletion(plain))
                default:
                    if key == PartitionRewrite.sequenceFloorKey, record.value.count == 8 {
                        floor = record.value.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
                    }
                    continue  // the key check
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
        if spools.wasPoked { _ = try await spools.ingest() }  // before every drain, once a writer poked
        return try await core.claimDue(at: now, limit: limit, lease: lease, accepting: accepting)
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
