import Crypto
import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

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
public final class LogOutboxStore: OutboxStore, CoreBackedStore {
    let core: StoreCore
    let log: OutboxLog
    /// Moves in what other processes spooled for this queue (Docs/OUTBOX.md).
    let spools: SpoolIngestor

    /// The queue's directory, `<root>/partitions/outbox+<32 hex>`.
    public var directory: FilePath { log.directory }

    /// What the log's open found (torn tail cut, damage salvaged, …).
    public var recoveryReport: RecoveryReport { log.recoveryReport }

    /// What moving in the spools found at the open.
    public let spoolReportAtOpen: OutboxSpoolReport

    /// What the open found among the payload files
    /// (``OutboxStoreConfiguration/largePayloadThreshold``): the files no
    /// entry referenced, removed.
    public let payloadRecovery: OutboxPayloadRecovery

    private init(
        core: StoreCore, log: OutboxLog, spools: SpoolIngestor, spoolReportAtOpen: OutboxSpoolReport,
        payloadRecovery: OutboxPayloadRecovery
    ) {
        self.core = core
        self.log = log
        self.spools = spools
        self.spoolReportAtOpen = spoolReportAtOpen
        self.payloadRecovery = payloadRecovery
    }

    /// Opens (creating if needed) the queue of `partition` under `root`.
    /// The log's open creates `root`, `root/partitions` and any missing
    /// directory above them (mode 0700), on the log's own threads.
    ///
    /// A relative `root` is relative to the current directory. If the open
    /// fails, the directories it created are removed again.
    ///
    /// - Throws: ``/OutboxModel/OutboxError`` — `.wrongKey` if the configured encryption
    ///   key does not open this partition's data, `.keyRequired` if the data
    ///   is encrypted and no key was given (nothing is modified in either
    ///   case), `.invalidArgument` for a configuration value out of range
    ///   (see ``/OutboxModel/OutboxLimits``), `.storage` for the log's errors (locked,
    ///   corruption, I/O).
    public static func open(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration = OutboxStoreConfiguration(),
        now: Date = Date()
    ) async throws(OutboxError) -> LogOutboxStore {
        try await open(root: root, partition: partition, configuration: configuration, now: now, previousSpools: [])
    }

    /// ``open(root:partition:configuration:now:)``, also moving in the
    /// spools of `previousSpools` (a re-key: the spools written under the
    /// old key's name, which only the re-keying process can read).
    static func open(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration, now: Date,
        previousSpools: [SpoolSource]
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
        let checkpointPath = directory.appending(StoreCheckpoint.fileName)
        // Its header first: the log's open collects the keys written after it.
        let checkpoint = isNew ? nil : await readCheckpointHeader(checkpointPath, fileSystem: fileSystem)
        let log: OutboxLog
        do {
            log = try await OutboxLog.open(
                at: directory, configuration: configuration.log, changesAfter: checkpoint?.position)
        } catch {
            // Locked: another open holds the queue, so the root is in use —
            // found missing by both, created by whichever came first: its
            // salt names the queue. Undo nothing.
            if error.code != .locked {
                queueCreated.removeIfEmpty()
                undoCreation(created, root: root, fileSystem: fileSystem)
            }
            throw .storage(error)
        }
        do throws(OutboxError) {
            let key = configuration.encryptionKey
            let format = RecordFormat(partition: partition, key: key)
            // A checkpoint that matches the log and authenticates under the
            // key proves the key (or its absence) without reading the log's
            // key check, which would wait for the log's index. Any other is
            // not used: the log decides, and every entry is read.
            let usable = checkpoint.flatMap { checkpoint in
                log.holdsHistory && checkpoint.trust(for: format) == .usable
                    ? StoreCore.earlySequence(checkpoint: checkpoint, logNext: log.statistics.nextSequence).map { (checkpoint, $0) }
                    : nil
            }
            if usable == nil { try await checkKey(log, key: key, partition: partition, writing: true) }
            try await nameAndProtect(directory, root: root, partition: partition, key: key, fileSystem: fileSystem)
            // Before anything is enqueued: files no entry references (a kill
            // between a file's write and its entry's) are removed.
            let payloadFiles = PayloadFileStore(
                queue: directory, fileSystem: fileSystem, format: format, observe: configuration.payloadFileObserver)
            let (ledger, payloadRecovery) = try await recoverPayloadFiles(payloadFiles, log: log)
            let backend = LogBackend(log: log, format: format, payloadFiles: payloadFiles, ledger: ledger)
            let checkpointFile = CheckpointFile(
                path: checkpointPath, format: format, fileSystem: fileSystem, log: log,
                interval: configuration.log.indexCheckpointInterval)
            let core = try await makeCore(
                loading: usable, partition: partition, configuration: configuration, backend: backend,
                checkpointFile: checkpointFile, openedAt: openedAt)
            log.observeCompactions { [weak core] in core?.writeCheckpointSoon() }
            // With a checkpoint this waits for the load only if a spool holds
            // entries to move in (their ingestion needs the whole queue).
            let spools = spoolIngestor(
                log: log, directory: directory, partition: partition, format: format, configuration: configuration,
                core: core, previousSpools: previousSpools)
            let spooled = try await spools.ingest()
            // Only now: see `beginLoad()`.
            core.beginLoad()
            return LogOutboxStore(
                core: core, log: log, spools: spools, spoolReportAtOpen: spooled, payloadRecovery: payloadRecovery)
        } catch {
            try? await log.close()
            // A queue this open created holds nothing anyone wrote: delete it.
            if isNew { try? await OutboxLog.destroy(at: directory, fileSystem: fileSystem) }
            undoCreation(created, root: root, fileSystem: fileSystem)
            throw error
        }
    }

    /// Deletes `partition`'s queue under `root`, and what other processes
    /// spooled for it, for logout. Fails with ``/OutboxModel/OutboxError/Code/busy``
    /// (deleting nothing) while a store has it open; after deleting the
    /// queue, with `.busy` too if a process is writing a spool for it at
    /// that moment (purge again to delete the spools).
    ///
    /// An encrypted queue's directory is named by its key: pass the key.
    /// Without one, where no plain queue of `partition` exists but the root
    /// holds encrypted queues, this fails with ``/OutboxModel/OutboxError/Code/keyRequired``
    /// rather than return as if it had deleted something.
    public static func purge(
        root: FilePath, partition: String, encryptionKey: SymmetricKey? = nil,
        fileSystem: any FileSystem = PosixFileSystem()
    ) async throws(OutboxError) {
        let (directories, sealedQueues, named) = try await offThePool { () throws(OutboxError) -> ([FilePath], Bool, FilePath?) in
            var directories: [FilePath] = []
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
        // purged before and a spool was still being written then), and,
        // for a sealed queue, what was spooled under its plain name.
        if let named { try await SpoolLayout.purge(ofQueue: named, fileSystem: fileSystem) }
        if let named, encryptionKey != nil,
            let plain = await (try? offThePool { () throws(OutboxError) -> SpoolSource? in
                SpoolSource.plainPredecessor(ofSealedQueue: named, partition: partition, fileSystem: fileSystem)
            }) ?? nil
        {
            try await SpoolLayout.purge(spools: plain.directory, fileSystem: fileSystem)
        }
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
        let sealer = key.map(KeyCheck.init(key:))
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

    // The OutboxStore methods are StoreCore's (CoreBackedStore).

    func prepareToClaim() async throws(OutboxError) {
        if spools.wasPoked { _ = try await spools.ingest() }  // before every drain, once a writer poked
    }
}
