import Crypto
import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

/// The steps of ``LogOutboxStore/open(root:partition:configuration:now:)``
/// that are not about directories or payload files.
extension LogOutboxStore {
    /// The store checkpoint's header, if there is a readable one (any other
    /// is not used: the log decides, and every entry is read).
    static func readCheckpointHeader(_ path: FilePath, fileSystem: any FileSystem) async -> StoreCheckpoint? {
        (try? await offThePool { () throws(OutboxError) -> StoreCheckpoint? in
            try? StoreCheckpoint.readHeader(path, fileSystem: fileSystem)
        }) ?? nil
    }

    /// Writes the queue's `PARTITION` name file and, on Apple platforms,
    /// the data protection of the root and the queue.
    static func nameAndProtect(
        _ directory: FilePath, root: FilePath, partition: String, key: SymmetricKey?, fileSystem: any FileSystem
    ) async throws(OutboxError) {
        try await offThePool { () throws(OutboxError) in
            try PartitionDirectory.writeName(partition, directory: directory, key: key, fileSystem: fileSystem)
            if fileSystem is PosixFileSystem {
                ApplePlatformProtection.apply(to: root)
                ApplePlatformProtection.apply(to: directory)
            }
        }
    }

    /// What moves spools into the queue: its own, a sealed queue's plain
    /// predecessor's, and `previousSpools` (a re-key's).
    static func spoolIngestor(
        log: OutboxLog, directory: FilePath, partition: String, format: RecordFormat,
        configuration: OutboxStoreConfiguration, core: StoreCore, previousSpools: [SpoolSource]
    ) -> SpoolIngestor {
        let fileSystem = configuration.log.fileSystem
        return SpoolIngestor(
            queue: log, format: format, key: configuration.encryptionKey, configuration: configuration.log, core: core,
            round: configuration.spoolRound, otherSources: { [format, fileSystem] in
                let sealing = format.isSealed
                    ? SpoolSource.plainPredecessor(ofSealedQueue: directory, partition: partition, fileSystem: fileSystem)
                    : nil
                return (sealing.map { [$0] } ?? []) + previousSpools
            })
    }

    /// The store's core over `backend`: answering at once, with the load of
    /// a usable checkpoint prepared (with the sequence numbers it may hand
    /// out meanwhile) to run in the background once it begins
    /// (``StoreCore/beginLoad()``), or, without one, after reading every
    /// entry of the log.
    static func makeCore(
        loading usable: (StoreCheckpoint, UInt64)?, partition: String, configuration: OutboxStoreConfiguration,
        backend: LogBackend, checkpointFile: CheckpointFile, openedAt: Int64
    ) async throws(OutboxError) -> StoreCore {
        let log = backend.log
        let format = backend.format
        if let (usable, earlySequence) = usable {
            let core = StoreCore(
                partition: partition, configuration: configuration, backend: backend,
                scheduler: Scheduler(partition: partition, configuration: configuration),
                loading: StoreLoading(nextSequence: earlySequence), checkpointFile: checkpointFile)
            core.state.withLock {
                $0.loading?.pending = PendingLoad(checkpoint: usable, log: log, format: format, openedAt: openedAt)
            }
            return core
        }
        var scheduler = Scheduler(partition: partition, configuration: configuration)
        let floor = try await StoreLoad.full(log, into: &scheduler, format: format)
        let changes = scheduler.finishLoading(now: openedAt, sequenceFloor: max(floor, log.statistics.nextSequence))
        let core = StoreCore(
            partition: partition, configuration: configuration, backend: backend, scheduler: scheduler,
            checkpointFile: checkpointFile)
        try await core.persistLoadingChanges(changes)
        // No checkpoint was usable: write one now if reading everything was
        // costly, so the next open (after a kill, say) needs less.
        if scheduler.entries.count + scheduler.completions.count >= StoreCore.checkpointAfterLoadThreshold {
            core.writeCheckpointSoon()
        }
        return core
    }
}
