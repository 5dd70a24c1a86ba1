import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

/// Enqueues a long run of writes into a user's queue through spools, in
/// batches, without ever opening the queue: a command-line import, a
/// migration, an extension that writes many entries.
///
/// Each ``enqueue(_:)`` is one batch, acknowledged once it has the
/// configuration's `enqueueDurability`, as a direct enqueue's would be.
/// The queue is never held, so the app keeps its queue open meanwhile and
/// moves the batches in as spools are closed (at once if it watches its
/// spools), and this process keeps nothing per entry: its memory does not
/// grow with the run. A spool is closed, and handed to the queue's owner,
/// once it holds ``maximumEntriesPerSpool`` entries (before the next batch
/// is written), and by ``close()``; a process
/// killed meanwhile leaves its open spool to the owner with every batch
/// that reached its durability.
///
/// The entries are moved in as `LogOutboxStore.enqueue(_:root:partition:configuration:)`
/// describes for its spooled path: duplicates, coalescing and dependencies
/// are decided by the queue when it takes them. Until then, they are not
/// in the queue: the next process that opens it (or a watching owner)
/// moves them in first.
///
/// Create one with ``LogOutboxStore/spoolWriter(root:partition:configuration:)``,
/// and close it when done: until then its open spool is not the owner's
/// to take (a process that ends without closing hands it over too).
/// Concurrent calls are taken one at a time, in order.
public actor OutboxSpoolWriter {
    /// Entries per spool before it is closed and the next one begins: a
    /// spool is read whole when it is moved in.
    public static let maximumEntriesPerSpool = 65_536

    private let partition: String
    private let configuration: OutboxStoreConfiguration
    private let format: RecordFormat
    private let spools: FilePath
    private let entriesPerSpool: Int
    private var spool: SpoolWriter?
    private var entriesInSpool = 0
    private var closed = false
    /// One call at a time across its suspension points (an actor alone
    /// would let a second call in at each await).
    private let gate = SerialGate()

    init(
        partition: String, configuration: OutboxStoreConfiguration, spools: FilePath,
        entriesPerSpool: Int = OutboxSpoolWriter.maximumEntriesPerSpool
    ) {
        self.partition = partition
        self.configuration = configuration
        self.spools = spools
        self.entriesPerSpool = max(1, entriesPerSpool)
        format = RecordFormat(partition: partition, key: configuration.encryptionKey)
    }

    /// Writes `requests` as one batch and waits for the configuration's
    /// `enqueueDurability`; returns each entry's id and idempotency key,
    /// in order.
    ///
    /// Every request is checked as `enqueue(_:)` checks it before anything
    /// is written. A batch of up to 4 MiB of encoded entries is atomic;
    /// a larger one is written in parts, and a crash meanwhile may leave
    /// some of its first entries to be moved in.
    ///
    /// - Throws: ``/OutboxModel/OutboxError`` — `.invalidArgument`/`.tooLarge` for a bad
    ///   request (nothing is written), `.closed` after ``close()``, and
    ///   `.storage` if the spool cannot be written (this writer is then
    ///   closed; what its spool holds is moved in all the same).
    public func enqueue(_ requests: [OutboxEnqueueRequest]) async throws(OutboxError) -> [OutboxSpooledEntry] {
        await gate.enter()
        defer { gate.leave() }
        guard !closed else { throw OutboxError(.closed, "\(spools): the spool writer is closed") }
        let bodies = try LogOutboxStore.prepareForSpool(requests, partition: partition, configuration: configuration)
        guard !bodies.isEmpty else { return [] }
        // A full spool is handed over before the next batch, not after the
        // last: a failure to close it then fails a batch not yet written.
        if entriesInSpool >= entriesPerSpool { try await closeSpool() }
        let writer: SpoolWriter
        if let spool {
            writer = spool
        } else {
            writer = try await SpoolWriter.open(in: spools, format: format, configuration: configuration)
            spool = writer
        }
        do throws(OutboxError) {
            try await writer.append(bodies, format: format)
        } catch {
            closed = true
            spool = nil
            await writer.abandon()
            await poke()
            throw error
        }
        entriesInSpool += bodies.count
        return bodies.map { OutboxSpooledEntry(id: $0.body.id, idempotencyKey: $0.body.idempotencyKey) }
    }

    /// Closes the open spool, handing it to the queue's owner. Further
    /// enqueues throw `.closed`.
    public func close() async throws(OutboxError) {
        await gate.enter()
        defer { gate.leave() }
        guard !closed else { return }
        closed = true
        try await closeSpool()
    }

    private func closeSpool() async throws(OutboxError) {
        guard let writer = spool else { return }
        spool = nil
        entriesInSpool = 0
        do throws(OutboxError) { try await writer.close() } catch {
            closed = true
            await poke()
            throw error
        }
        await poke()
    }

    /// Tells the owner a spool is there to take.
    private func poke() async {
        let spools = spools
        let fileSystem = configuration.log.fileSystem
        _ = try? await offThePool { () throws(OutboxError) in SpoolPoke.post(spools, fileSystem: fileSystem) }
    }
}
