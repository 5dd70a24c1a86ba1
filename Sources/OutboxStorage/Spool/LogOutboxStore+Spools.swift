import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

// Enqueue from another process (Docs/OUTBOX.md, "Enqueue from another
// process"): an app extension, a widget, a CLI writes into a queue that the
// app may hold open.

extension LogOutboxStore {
    /// Enqueues `requests` into `partition`'s queue under `root`, whether
    /// or not another process holds it open.
    ///
    /// - If no process holds the queue, this one opens it (which first moves
    ///   in what other processes spooled), enqueues each request, and closes
    ///   it again: ``OutboxSharedEnqueueResult/direct(_:)`` with the queue's
    ///   answers.
    /// - If another process holds it, the requests are written into a new
    ///   spool of this process's own beside the queue (same record format,
    ///   CRC, encryption and `enqueueDurability` as the queue), and the
    ///   holder is told: ``OutboxSharedEnqueueResult/spooled(_:)``. When
    ///   this returns, the spool write has the configured durability — the
    ///   entries are as safe as a direct enqueue's. The holder moves them in
    ///   (at once if it watches its spools, ``watchSpools(pollInterval:onIngested:)``;
    ///   before its next drain after a poke; at its next open otherwise),
    ///   each exactly once, with its id, idempotency key, dependencies and
    ///   `local:` references unchanged.
    ///
    /// Each request is checked as `enqueue(_:)` checks it, before anything
    /// is written; dependencies and duplicates can only be decided by the
    /// queue, so a spooled entry that depends on an entry the queue does not
    /// know is recorded quarantined there (``/OutboxModel/OutboxStatus/quarantined``), and one
    /// whose id the queue holds is dropped as a duplicate. The queue is held
    /// only for the moment of a direct write: a process that keeps it open
    /// (the app) should be the one that drains it.
    ///
    /// - Throws: ``/OutboxModel/OutboxError`` — `.invalidArgument`/`.tooLarge` for a bad
    ///   request (nothing is written), what `open(root:partition:configuration:now:)`
    ///   throws other than a lock held elsewhere, `.wrongKey` if this
    ///   process has a key and the queue is held by one that opened it
    ///   plain (nothing is written), and `.storage` if the
    ///   spool cannot be written (as for a direct enqueue that throws, the
    ///   entries may or may not be moved in later: enqueue them again with
    ///   the same ids, and the queue keeps one of each).
    public static func enqueue(
        _ requests: [OutboxEnqueueRequest], root: FilePath, partition: String,
        configuration: OutboxStoreConfiguration = OutboxStoreConfiguration()
    ) async throws(OutboxError) -> OutboxSharedEnqueueResult {
        let format = RecordFormat(partition: partition, key: configuration.encryptionKey)
        // Every request is checked before anything is written, on either path.
        let bodies = try prepareForSpool(requests, partition: partition, configuration: configuration)
        let store: LogOutboxStore
        do {
            store = try await open(root: root, partition: partition, configuration: configuration)
        } catch where error.storage?.code == .locked {
            let queue = try await offThePool { () throws(OutboxError) -> String in
                try heldQueueName(root: root, partition: partition, configuration: configuration)
            }
            let spools = SpoolLayout.directory(root: root, queueName: queue)
            _ = try await SpoolWriter.write(bodies, format: format, spools: spools, configuration: configuration)
            let fileSystem = configuration.log.fileSystem
            _ = try? await offThePool { () throws(OutboxError) in SpoolPoke.post(spools, fileSystem: fileSystem) }
            return .spooled(bodies.map { OutboxSpooledEntry(id: $0.body.id, idempotencyKey: $0.body.idempotencyKey) })
        }
        var results: [OutboxEnqueueResult] = []
        do {
            for request in requests { results.append(try await store.enqueue(request)) }
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
        return .direct(results)
    }

    /// Checks `requests` and encodes each as its queue would store it, for
    /// a spool: nothing is written if one is refused.
    static func prepareForSpool(
        _ requests: [OutboxEnqueueRequest], partition: String, configuration: OutboxStoreConfiguration
    ) throws(OutboxError) -> [PreparedBody] {
        guard !partition.isEmpty else { throw OutboxError(.invalidArgument, "the partition (user) name is empty") }
        try Admission.check(configuration)
        // An id leaves this process here, on either path: once it may be in
        // a spool, no later enqueue of it may be admitted without the queue
        // (``FreshEntryIDs``), or a reopened store still loading would take
        // the same write a second time.
        for request in requests { _ = FreshEntryIDs.take(request.id) }
        let format = RecordFormat(partition: partition, key: configuration.encryptionKey)
        let now = Date().milliseconds
        return try requests.map { request throws(OutboxError) in
            try StoreCore.admit(request, partition: partition, configuration: configuration, now: now) {
                body throws(OutboxError) in try LogBackend.prepare(body, format: format)
            }
        }
    }

    /// A writer that enqueues batches into `partition`'s queue under `root`
    /// through spools, without opening the queue: for a long run of writes
    /// whose process should neither hold the queue nor keep anything per
    /// entry (``OutboxSpoolWriter``).
    ///
    /// The queue must exist; if it does not (and the configuration creates
    /// missing queues), it is created first by opening and closing it, as
    /// it is if a key was given for a queue that is still plain (the open
    /// seals it).
    ///
    /// - Throws: ``/OutboxModel/OutboxError`` — what `open(root:partition:configuration:)`
    ///   throws when the queue must be created, `.wrongKey` if the queue is
    ///   held open plain while this process has a key.
    public static func spoolWriter(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration = OutboxStoreConfiguration()
    ) async throws(OutboxError) -> OutboxSpoolWriter {
        try await spoolWriter(
            root: root, partition: partition, configuration: configuration,
            entriesPerSpool: OutboxSpoolWriter.maximumEntriesPerSpool)
    }

    /// ``spoolWriter(root:partition:configuration:)`` closing its spools
    /// every `entriesPerSpool` entries (tests).
    package static func spoolWriter(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration, entriesPerSpool: Int
    ) async throws(OutboxError) -> OutboxSpoolWriter {
        guard !partition.isEmpty else { throw OutboxError(.invalidArgument, "the partition (user) name is empty") }
        try Admission.check(configuration)
        let find = { () async throws(OutboxError) -> String in
            try await offThePool { () throws(OutboxError) -> String in
                try heldQueueName(root: root, partition: partition, configuration: configuration)
            }
        }
        let queue: String
        do { queue = try await find() } catch where error.code == .notFound || error.code == .wrongKey {
            // No queue under this name yet: the open makes it (or seals the plain one).
            do { try await open(root: root, partition: partition, configuration: configuration).close() } catch
                where error.storage?.code == .locked
            {}
            queue = try await find()
        }
        return OutboxSpoolWriter(
            partition: partition, configuration: configuration, spools: SpoolLayout.directory(root: root, queueName: queue),
            entriesPerSpool: entriesPerSpool)
    }

    /// The directory name of the queue another process holds (its lock
    /// refused the open, so its naming key exists). Blocking.
    ///
    /// The lock that refused may be another queue's: a key given beside
    /// the user's plain queue makes the open seal that queue under a new
    /// name, and the plain queue is what is held. No queue has the sealed
    /// name then, and a spool under it would wait while the app runs
    /// plain: refused with `.wrongKey`.
    private static func heldQueueName(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration
    ) throws(OutboxError) -> String {
        let fileSystem = configuration.log.fileSystem
        guard
            let naming = try PartitionDirectory.naming(
                root: root, key: configuration.encryptionKey, fileSystem: fileSystem, create: false)
        else { throw OutboxError(.notFound, "\(root): the outbox root has no naming key") }
        let name = PartitionDirectory.name(partition, naming: naming)
        guard (try? fileSystem.itemKind(at: PartitionDirectory.path(root: root, name: name))) == .directory else {
            throw OutboxError(
                .wrongKey,
                "\(root): the queue is held open without the encryption key this process was given; "
                    + "give every process that opens it the same key (nothing was written)")
        }
        return name
    }

    /// Moves in now what other processes spooled for this queue: every
    /// spool whose writer is done with it (or was killed). The open does
    /// this too, and ``OutboxStore/claimDue(at:limit:lease:accepting:)`` does it first
    /// once a writer has poked; an app that keeps its queue open watches
    /// with ``watchSpools(pollInterval:onIngested:)``.
    ///
    /// - Throws: only if the queue itself fails (it is then closed to
    ///   further work); a spool that cannot be read is kept and reported.
    public func ingestSpools() async throws(OutboxError) -> OutboxSpoolReport { try await spools.ingest() }

    /// The files of the spooled records this queue set aside
    /// (``OutboxSpoolProblem/Kind/setAside``): entries it can never take as
    /// they were written, kept byte for byte under `<queue>/refused/`
    /// (sealed if the queue is), never sent. They go with the queue's purge.
    public func setAsideRecords() async throws(OutboxError) -> [FilePath] {
        let records = spools.setAsideRecords
        return try await offThePool { () throws(OutboxError) -> [FilePath] in
            try records.names().map { records.directory.appending($0) }
        }
    }
}

extension LogOutboxStore {
    /// `enqueue(_:root:partition:configuration:)` under the directory a
    /// `file:` URL names — an App Group container's, say. Any other URL
    /// throws ``/OutboxModel/OutboxError/Code/invalidArgument``.
    public static func enqueue(
        _ requests: [OutboxEnqueueRequest], root: URL, partition: String,
        configuration: OutboxStoreConfiguration = OutboxStoreConfiguration()
    ) async throws(OutboxError) -> OutboxSharedEnqueueResult {
        let path: FilePath
        do { path = try root.filePath() } catch { throw OutboxError(.invalidArgument, error.message) }
        return try await enqueue(requests, root: path, partition: partition, configuration: configuration)
    }
}
