import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

/// One spool being written by this process: the other half of
/// `LogOutboxStore.enqueue(_:root:partition:configuration:)` when the
/// queue is held by another process, and of ``OutboxSpoolWriter``.
///
/// A spool is an ``OutboxLog`` like the queue — same framing and CRC, same
/// durability levels, same record format (``RecordFormat``: the entry's
/// body record, sealed under the same key and bound to the same log key as
/// in the queue) — in its own directory with its own lock. A writer creates
/// a new spool each time (a fresh name), writes, syncs as asked and closes
/// it; it never opens a spool again. So the owner may move in and delete
/// any spool whose lock it can take: its writer is done with it, or was
/// killed (then the owner takes what the spool's log recovers: every batch
/// that reached the asked durability).
package struct SpoolWriter: Sendable {
    /// The largest batch handed to the spool's log at once (the log holds
    /// at most 32 MiB waiting to be written).
    static let batchBytes = 4 << 20

    let id: SpoolID
    let spools: FilePath
    private let log: OutboxLog
    private let guardLock: FileDescriptor
    private let configuration: OutboxStoreConfiguration

    /// Writes `bodies` (encoded in `format`) into a new spool under
    /// `spools`, waiting for `configuration.enqueueDurability`, and closes
    /// it; returns the spool's name.
    package static func write(
        _ bodies: [PreparedBody], format: RecordFormat, spools: FilePath, configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) -> SpoolID {
        let writer = try await open(in: spools, format: format, configuration: configuration)
        do throws(OutboxError) {
            try await writer.append(bodies, format: format)
        } catch {
            await writer.abandon()
            throw error
        }
        try await writer.close()
        return writer.id
    }

    /// A new spool under `spools`, open and locked; for a sealed queue its
    /// first record is the key's canary, which the owner checks before
    /// reading anything else.
    static func open(
        in spools: FilePath, format: RecordFormat, configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) -> SpoolWriter {
        let fileSystem = configuration.log.fileSystem
        try await offThePool { () throws(OutboxError) in
            do throws(OutboxLogError) { _ = try fileSystem.createDirectoryWithParents(spools) } catch { throw .storage(error) }
            // Another writer may have created them a moment ago and not yet
            // synced their names: this spool's survival must not hang on it.
            for directory in [spools.removingLastComponent().removingLastComponent(), spools.removingLastComponent()] {
                do throws(Errno) { try fileSystem.synchronizeDirectory(directory) } catch {
                    throw .storage(OutboxLogError(.io, "cannot sync the spools' directory", file: directory, errno: error))
                }
            }
        }
        let (spool, log, guardLock) = try await openNewSpool(in: spools, configuration: configuration)
        let writer = SpoolWriter(id: spool, spools: spools, log: log, guardLock: guardLock, configuration: configuration)
        if let sealer = configuration.encryptionKey.map(KeyCheck.init(key:)) {
            do throws(OutboxError) {
                // Buffered: the first batch's durability covers it (the log keeps a prefix).
                let canary = try sealer.sealCanary(partition: format.partition)
                do { _ = try await log.append([.value(RecordFormat.canaryKey, canary)], durability: .buffered) } catch {
                    throw OutboxError.storage(error)
                }
            } catch {
                await writer.abandon()
                throw error
            }
        }
        return writer
    }

    /// Appends `bodies` and waits for the configuration's
    /// `enqueueDurability`. Up to ``batchBytes`` of bodies go in one atomic
    /// log batch; more are split, and a crash while writing them may leave
    /// a prefix of them in the spool.
    func append(_ bodies: [PreparedBody], format: RecordFormat) async throws(OutboxError) {
        var batches: [[LogWrite]] = [[]]
        var bytes = 0
        for body in bodies {
            guard let encoded = body.encoded else { continue }
            if bytes + encoded.count > Self.batchBytes, !batches[batches.count - 1].isEmpty {
                batches.append([])
                bytes = 0
            }
            batches[batches.count - 1].append(.value(format.entryKey(body.body.id), encoded))
            bytes += encoded.count
        }
        for (index, batch) in batches.enumerated() where !batch.isEmpty {
            // Only the last batch waits: the log keeps a prefix, so its
            // durability covers every batch before it.
            let durability: Durability = index == batches.count - 1 ? configuration.enqueueDurability : .buffered
            do { _ = try await log.append(batch, durability: durability) } catch { throw OutboxError.storage(error) }
        }
    }

    /// Closes the spool (syncing it) and releases its guard: from here the
    /// owner may take it. Then pokes the owner.
    func close() async throws(OutboxError) {
        let fileSystem = configuration.log.fileSystem
        // The guard is released once the spool is closed (or the close
        // failed): then, and only then, may the owner take the spool.
        defer { try? fileSystem.close(guardLock) }
        do { try await log.close() } catch { throw OutboxError.storage(error) }
    }

    /// Closes after a failed write, reporting nothing: what reached the
    /// spool's log is the owner's to take.
    func abandon() async {
        try? await log.close()
        try? configuration.log.fileSystem.close(guardLock)
    }

    /// A new spool, open and locked, and its guard, locked before the spool's
    /// directory exists (so no owner ever takes a spool being created). An
    /// open that fails before anything is written is tried again under a
    /// new name.
    private static func openNewSpool(
        in spools: FilePath, configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) -> (SpoolID, OutboxLog, FileDescriptor) {
        var logConfiguration = configuration.log
        logConfiguration.createIfMissing = true
        logConfiguration.automaticCompactionRatio = nil
        let fileSystem = configuration.log.fileSystem
        var attempt = 0
        while true {
            let spool = SpoolID.random()
            let guardLock = try await offThePool { () throws(OutboxError) -> FileDescriptor? in
                try SpoolLayout.takeGuard(spools, spool, fileSystem: fileSystem)
            }
            attempt += 1
            guard let guardLock else {
                guard attempt < 3 else { throw OutboxError(.busy, "\(spools): cannot lock a new spool's guard") }
                continue
            }
            do {
                return (spool, try await OutboxLog.open(at: SpoolLayout.path(spools, spool), configuration: logConfiguration), guardLock)
            } catch {
                try? fileSystem.close(guardLock)
                guard attempt < 3, [.locked, .notFound, .io].contains(error.code) else { throw .storage(error) }
            }
        }
    }
}
