import Crypto
import Foundation
import OutboxLog
import SystemPackage

// Finding a user's queue under its keyed name (PartitionDirectory): moving a
// queue from its name before issue 15, sealing a plain queue when a key is
// first given, and refusing to mix plain and sealed queues in one root.

extension LogOutboxStore {
    /// The directory of `partition`'s queue, after any move or sealing it
    /// needed. Creates the root's salt (and the root) for an unencrypted
    /// root that has none, if the configuration creates missing queues.
    ///
    /// - Throws: `.keyRequired` to create a plain queue in a root that holds
    ///   sealed ones; `.wrongKey` to create a queue under a key that opens
    ///   none of the root's sealed queues (one root, one key); the key check
    ///   of a queue being moved; `.storage` for I/O.
    static func queueDirectory(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) -> FilePath {
        let key = configuration.encryptionKey
        let fileSystem = configuration.log.fileSystem
        let legacy = PartitionDirectory.legacyPath(root: root, partition: partition)
        let create = configuration.log.createIfMissing
        // Stats, the salt and the directory listing: small, but file system calls all the same.
        let found = try await offThePool { () throws(OutboxError) -> Found in
            let legacyExists = (try? fileSystem.itemKind(at: legacy)) == .directory
            if key == nil, create || legacyExists {
                do throws(OutboxLogError) {
                    _ = try fileSystem.createDirectoryWithParents(PartitionDirectory.partitionsDirectory(root))
                } catch {
                    throw .storage(error)
                }
            }
            guard
                let naming = try PartitionDirectory.naming(
                    root: root, key: key, fileSystem: fileSystem, create: create || legacyExists)
            else { return Found(directory: nil, exists: false, legacyExists: legacyExists, plain: nil) }
            let directory = PartitionDirectory.path(root: root, name: PartitionDirectory.name(partition, naming: naming))
            var plain: FilePath?
            if key != nil, let plainNaming = try PartitionDirectory.naming(root: root, key: nil, fileSystem: fileSystem, create: false) {
                let path = PartitionDirectory.path(root: root, name: PartitionDirectory.name(partition, naming: plainNaming))
                if (try? fileSystem.itemKind(at: path)) == .directory { plain = path }
            }
            return Found(
                directory: directory, exists: (try? fileSystem.itemKind(at: directory)) == .directory,
                legacyExists: legacyExists, plain: plain)
        }
        // No salt and nothing to create: no queue can exist; the log's open reports it missing.
        guard let directory = found.directory else {
            return PartitionDirectory.path(root: root, name: PartitionDirectory.prefix + "none")
        }
        let legacyExists = found.legacyExists
        let exists = found.exists
        if legacyExists {
            if exists {
                // A move that committed and was cut before it deleted the old directory.
                do { try await OutboxLog.destroy(at: legacy, fileSystem: fileSystem) } catch { throw .storage(error) }
            } else {
                try await move(legacy, as: .legacy(partition: partition, key: key), to: directory, configuration: configuration)
            }
            return directory
        }
        if exists {
            try await checkNotReplaced(directory, root: root, fileSystem: fileSystem)
            _ = try await finishReplacement(directory, fileSystem: fileSystem)
            return directory
        }
        try await checkRootKey(root: root, key: key, oneKeyPerRoot: configuration.oneKeyPerRoot, fileSystem: fileSystem)
        // A plain queue of this user, now opened with a key: seal it.
        if let plain = found.plain {
            try await move(plain, as: RecordFormat(partition: partition, key: nil), to: directory, configuration: configuration)
        }
        return directory
    }

    /// What ``queueDirectory(root:partition:configuration:)`` found on disk.
    private struct Found: Sendable {
        /// Where the queue lives (`nil`: no salt, so no queue can exist yet).
        var directory: FilePath?
        var exists: Bool
        /// A queue from before issue 15 is there.
        var legacyExists: Bool
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

    /// Moves the queue at `source` (records in `format`) to `target`: a
    /// rename if it stays plain, a sealed copy if a key is configured.
    private static func move(
        _ source: FilePath, as format: RecordFormat, to target: FilePath, configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) {
        let key = configuration.encryptionKey
        var logConfiguration = configuration.log
        logConfiguration.createIfMissing = false
        logConfiguration.automaticCompactionRatio = nil
        let log: OutboxLog
        do { log = try await OutboxLog.open(at: source, configuration: logConfiguration) } catch { throw .storage(error) }
        do {
            try await checkKey(log, key: key, partition: format.partition, writing: false)
            if let key {
                // A queue of this layout (not one from before issue 15) is
                // named in the copy until it is deleted: opens refuse it.
                let sourceName = source.lastComponent?.string ?? ""
                let previous = sourceName.hasPrefix(PartitionDirectory.prefix) ? sourceName : nil
                let targetName = target.lastComponent?.string ?? ""
                let fileSystem = configuration.log.fileSystem
                try await PartitionRewrite.copy(
                    log, as: format, to: target, as: RecordFormat(partition: format.partition, key: key), targetKey: key,
                    configuration: configuration.log,
                    beforeCommit: { temporary throws(OutboxError) in
                        try PartitionDirectory.writeName(
                            format.partition, directory: temporary, name: targetName, key: key, fileSystem: fileSystem)
                        if let previous {
                            try SmallFile.write(
                                Array(previous.utf8), to: temporary.appending(PartitionDirectory.previousFileName),
                                fileSystem: fileSystem, replacing: true)
                        }
                    })
            }
            try await log.closeForMove()
        } catch {
            try? await log.close()
            throw error
        }
        let fileSystem = configuration.log.fileSystem
        if key != nil {
            do { try await OutboxLog.destroy(at: source, fileSystem: fileSystem) } catch { throw .storage(error) }
            _ = try await finishReplacement(target, fileSystem: fileSystem)
            return
        }
        try await offThePool { () throws(OutboxError) in
            do throws(Errno) {
                try fileSystem.rename(source, to: target)
                try fileSystem.synchronizeDirectory(target.removingLastComponent())
            } catch {
                throw .storage(OutboxLogError(.io, "cannot move the queue to its new name", file: source, errno: error))
            }
        }
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
    /// Closes a log about to be moved or deleted.
    fileprivate func closeForMove() async throws(OutboxError) {
        do { try await close() } catch { throw .storage(error) }
    }
}
