import Crypto
import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

// Finding a user's queue under its keyed name (PartitionDirectory): sealing a
// plain queue when a key is first given, and refusing to mix plain and
// sealed queues in one root.

extension LogOutboxStore {
    /// The directory of `partition`'s queue, after any sealing it needed. Creates the root's salt (and the root) for an unencrypted
    /// root that has none, if the configuration creates missing queues.
    ///
    /// - Throws: `.keyRequired` to create a plain queue in a root that holds
    ///   sealed ones; `.wrongKey` to create a queue under a key that opens
    ///   none of the root's sealed queues (one root, one key); the key check
    ///   of a queue being sealed; `.storage` for I/O.
    static func queueDirectory(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) -> FilePath {
        let key = configuration.encryptionKey
        let fileSystem = configuration.log.fileSystem
        let create = configuration.log.createIfMissing
        // Stats, the salt and the directory listing: small, but file system calls all the same.
        let found = try await offThePool { () throws(OutboxError) -> Found in
            if key == nil, create {
                do throws(OutboxLogError) {
                    _ = try fileSystem.createDirectoryWithParents(PartitionDirectory.partitionsDirectory(root))
                } catch {
                    throw .storage(error)
                }
            }
            guard
                let naming = try PartitionDirectory.naming(
                    root: root, key: key, fileSystem: fileSystem, create: create)
            else { return Found(directory: nil, exists: false, plain: nil) }
            let directory = PartitionDirectory.path(root: root, name: PartitionDirectory.name(partition, naming: naming))
            var plain: FilePath?
            if key != nil, let plainNaming = try PartitionDirectory.naming(root: root, key: nil, fileSystem: fileSystem, create: false) {
                let path = PartitionDirectory.path(root: root, name: PartitionDirectory.name(partition, naming: plainNaming))
                if (try? fileSystem.itemKind(at: path)) == .directory { plain = path }
            }
            return Found(directory: directory, exists: (try? fileSystem.itemKind(at: directory)) == .directory, plain: plain)
        }
        // No salt and nothing to create: no queue can exist; the log's open reports it missing.
        guard let directory = found.directory else {
            return PartitionDirectory.path(root: root, name: PartitionDirectory.prefix + "none")
        }
        if found.exists {
            try await checkNotReplaced(directory, root: root, fileSystem: fileSystem)
            _ = try await finishReplacement(directory, fileSystem: fileSystem)
            return directory
        }
        try await checkRootKey(root: root, key: key, oneKeyPerRoot: configuration.oneKeyPerRoot, fileSystem: fileSystem)
        // A plain queue of this user, now opened with a key: seal it.
        if let plain = found.plain, let key {
            try await seal(plain, partition: partition, key: key, to: directory, configuration: configuration)
        }
        return directory
    }

    /// What ``queueDirectory(root:partition:configuration:)`` found on disk.
    private struct Found: Sendable {
        /// Where the queue lives (`nil`: no salt, so no queue can exist yet).
        var directory: FilePath?
        var exists: Bool
        /// With a key: this user's plain queue, to seal.
        var plain: FilePath?
    }

    /// Removes what a failed open created: the root's salt if it created
    /// the root, then the directories it created that are empty.
    static func undoCreation(_ created: CreatedDirectories, root: FilePath, fileSystem: any FileSystem) {
        if created.isNew(root) {
            try? fileSystem.removeFile(root.appending(PartitionDirectory.saltName))
            try? fileSystem.removeFile(root.appending(RootSalt.lockName))
        }
        created.removeIfEmpty()
    }

    /// Seals the plain queue of `partition` at `source` under `key` into
    /// `target`: a sealed copy, committed by one rename, then the plain
    /// queue deleted (``PartitionRewrite``).
    private static func seal(
        _ source: FilePath, partition: String, key: SymmetricKey, to target: FilePath,
        configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) {
        var logConfiguration = configuration.log
        logConfiguration.createIfMissing = false
        logConfiguration.automaticCompactionRatio = nil
        let fileSystem = configuration.log.fileSystem
        let log: OutboxLog
        do { log = try await OutboxLog.open(at: source, configuration: logConfiguration) } catch { throw .storage(error) }
        do {
            try await checkKey(log, key: key, partition: partition, writing: false)
            try await PartitionRewrite.copy(
                log, as: RecordFormat(partition: partition, key: nil), replacing: source.lastComponent?.string ?? "", to: target,
                as: RecordFormat(partition: partition, key: key), targetKey: key, configuration: configuration.log)
            try await log.closeForMove()
        } catch {
            try? await log.close()
            throw error
        }
        do { try await OutboxLog.destroy(at: source, fileSystem: fileSystem) } catch { throw .storage(error) }
        _ = try await finishReplacement(target, fileSystem: fileSystem)
    }

    /// One root, one key: a new queue is not created beside sealed queues
    /// without a key, nor beside sealed queues none of which opens with its key.
    private static func checkRootKey(
        root: FilePath, key: SymmetricKey?, oneKeyPerRoot: Bool, fileSystem: any FileSystem
    ) async throws(OutboxError) {
        let (sealed, opening) = await (try? offThePool { () throws(OutboxError) -> (Int, Int) in
            let files = PartitionDirectory.sealedNameFiles(root: root, fileSystem: fileSystem)
            let opening = key.map { key in
                let sealer = RecordSealer(key: key)
                return files.filter { file in
                    (try? sealer.open(file.contents.dropFirst(), .partitionName, partition: "", binding: Array(file.directory.utf8))) != nil
                }.count
            } ?? 0
            return (files.count, opening)
        }) ?? (0, 0)
        if key == nil, sealed > 0 {
            throw OutboxError(.keyRequired, "the queues under \(root) are encrypted; open them with their key")
        }
        if key != nil, oneKeyPerRoot, sealed > 0, opening == 0 {
            throw OutboxError(
                .wrongKey,
                "the encryption key opens none of the queues under \(root) (one root holds the queues of one key, "
                    + "unless oneKeyPerRoot is off); nothing was changed")
        }
    }
}

extension OutboxLog {
    /// Closes a log about to be copied and deleted.
    fileprivate func closeForMove() async throws(OutboxError) {
        do { try await close() } catch { throw .storage(error) }
    }
}
