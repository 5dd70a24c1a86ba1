import Crypto
import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

// Key rotation: a queue re-encrypted under a new key through a copy that one
// rename commits (PartitionRewrite). A sealed queue's directory is named by
// its key, so the copy gets a new directory; until the old one is deleted,
// the copy's PREVIOUS file names it, and every open refuses the old one.

extension LogOutboxStore {
    /// Re-encrypts `partition`'s queue under `newKey`: every entry, state and
    /// mapping is copied, sealed under the new key, into a new directory
    /// (the directory's name is derived from the key), which replaces the
    /// old one in one rename; the old one is then deleted.
    ///
    /// Crash-safe: a kill at any point leaves the old key opening the whole
    /// queue (before the rename) or the new key opening the whole queue
    /// (after it) — never both, never neither, no entry lost or doubled.
    /// Running `rekey` again, or opening with the new key, finishes a
    /// rotation cut after its rename. Until then, open nothing with the new
    /// key that the rotation has not reached.
    ///
    /// - Throws: `.notFound` if no queue of `partition` is sealed under
    ///   `oldKey` or `newKey` (a wrong old key names no directory, so it
    ///   looks like no queue; nothing is changed), `.busy` while a store has
    ///   it open, `.storage` for I/O.
    public static func rekey(
        root: FilePath, partition: String, from oldKey: SymmetricKey, to newKey: SymmetricKey,
        configuration: OutboxStoreConfiguration = OutboxStoreConfiguration()
    ) async throws(OutboxError) {
        try await rekey(root: root, partition: partition, from: oldKey, to: newKey, configuration: configuration) { _ in }
    }

    /// Re-encrypts `partition`'s queue under the directory a `file:` URL
    /// names, from `configuration`'s key to `newKey` (raw bytes: 32, 24 or
    /// 16), without importing Crypto; see
    /// ``rekey(root:partition:from:to:configuration:)``. Open the queue with
    /// the new key afterwards.
    ///
    /// - Throws: `.invalidArgument` if `configuration` has no key, `newKey`
    ///   has another length, or `root` is not a file URL; otherwise as the
    ///   `SymmetricKey` form.
    public static func rekey(
        root: URL, partition: String, configuration: OutboxStoreConfiguration, newKey: [UInt8]
    ) async throws(OutboxError) {
        guard let oldKey = configuration.encryptionKey else {
            throw OutboxError(.invalidArgument, "the configuration has no encryption key to re-key from")
        }
        var next = configuration
        try next.setEncryptionKey(newKey)
        guard let newKey = next.encryptionKey else { return }
        let path: FilePath
        do { path = try root.filePath() } catch { throw OutboxError(.invalidArgument, error.message) }
        try await rekey(root: path, partition: partition, from: oldKey, to: newKey, configuration: configuration)
    }

    /// ``rekey(root:partition:from:to:configuration:)``, telling `progress`
    /// each step (the CLI's crash test kills itself at one).
    package static func rekey(
        root: FilePath, partition: String, from oldKey: SymmetricKey, to newKey: SymmetricKey,
        configuration: OutboxStoreConfiguration, progress: @escaping @Sendable (RekeyStep) -> Void
    ) async throws(OutboxError) {
        guard !partition.isEmpty else { throw OutboxError(.invalidArgument, "the partition (user) name is empty") }
        let fileSystem = configuration.log.fileSystem
        let oldName = PartitionDirectory.name(partition, naming: RecordSealer(key: oldKey).naming)
        let newName = PartitionDirectory.name(partition, naming: RecordSealer(key: newKey).naming)
        let old = PartitionDirectory.path(root: root, name: oldName)
        let new = PartitionDirectory.path(root: root, name: newName)
        guard oldName != newName else { return }  // the same key
        let oldSpools = SpoolSource(
            directory: SpoolLayout.directory(root: root, queueName: oldName), format: RecordFormat(partition: partition, key: oldKey),
            key: oldKey, inQueueFormat: false)
        if try await finishReplacement(new, fileSystem: fileSystem) {
            try await moveIn(oldSpools, root: root, partition: partition, newKey: newKey, configuration: configuration)
            return
        }
        var logConfiguration = configuration.log
        logConfiguration.createIfMissing = false
        logConfiguration.automaticCompactionRatio = nil
        let log: OutboxLog
        do { log = try await OutboxLog.open(at: old, configuration: logConfiguration) } catch {
            if error.code == .notFound {
                throw OutboxError(.notFound, "no queue of \(partition) under \(root) opens with the old key", storage: error)
            }
            if error.code == .locked {
                throw OutboxError(.busy, "the queue of \(partition) is open; close it first", storage: error)
            }
            throw .storage(error)
        }
        do {
            try await checkKey(log, key: oldKey, partition: partition, writing: false)
            try await PartitionRewrite.copy(
                log, as: RecordFormat(partition: partition, key: oldKey), replacing: oldName, to: new,
                as: RecordFormat(partition: partition, key: newKey), targetKey: newKey, configuration: configuration.log,
                progress: progress)
        } catch {
            try? await log.close()
            throw error
        }
        progress(.committed)
        do { try await log.close() } catch { throw .storage(error) }
        _ = try await finishReplacement(new, fileSystem: fileSystem, progress: progress)
        try await moveIn(oldSpools, root: root, partition: partition, newKey: newKey, configuration: configuration)
    }

    /// Moves what was spooled under the old key's name into the re-keyed
    /// queue, sealed under the new key: only a re-key holds both keys, so
    /// it does this before it returns (and again when run to finish a cut
    /// one). A spool still being written is left: `.busy`, run `rekey`
    /// again.
    private static func moveIn(
        _ oldSpools: SpoolSource, root: FilePath, partition: String, newKey: SymmetricKey,
        configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) {
        let fileSystem = configuration.log.fileSystem
        let waiting = try await offThePool { () throws(OutboxError) -> Bool in
            !(try SpoolLayout.list(oldSpools.directory, fileSystem: fileSystem)).isEmpty
        }
        guard waiting else {
            try? await SpoolLayout.purge(spools: oldSpools.directory, fileSystem: fileSystem)
            return
        }
        var next = configuration
        next.encryptionKey = newKey
        let store = try await open(root: root, partition: partition, configuration: next, now: Date(), previousSpools: [oldSpools])
        let report = store.spoolReportAtOpen
        try await store.close()
        if report.spoolsBusy > 0 {
            throw OutboxError(
                .busy, "a process is still writing a spool under the old key: run rekey again to move it into the re-keyed queue")
        }
    }

    /// If `directory` is a committed queue that replaced another, deletes
    /// the other (if still there) and then the note naming it. Returns
    /// whether `directory` exists.
    static func finishReplacement(
        _ directory: FilePath, fileSystem: any FileSystem, progress: @Sendable (RekeyStep) -> Void = { _ in }
    ) async throws(OutboxError) -> Bool {
        let note = directory.appending(PartitionDirectory.previousFileName)
        let previous = try await offThePool { () throws(OutboxError) -> String?? in
            guard (try? fileSystem.itemKind(at: directory)) == .directory else { return .none }
            return .some(try SmallFile.read(note, fileSystem: fileSystem).flatMap { String(checkedUTF8: $0) })
        }
        guard let previous else { return false }
        guard let previous else { return true }
        guard previous.hasPrefix(PartitionDirectory.prefix), !previous.contains("/") else {
            throw OutboxError(.corruptEntry, "\(note): not the name of a queue")
        }
        let replaced = directory.removingLastComponent().appending(previous)
        do { try await OutboxLog.destroy(at: replaced, fileSystem: fileSystem) } catch {
            if error.code == .locked {
                throw OutboxError(.busy, "the queue this one replaced (\(previous)) is open; close it first", storage: error)
            }
            throw .storage(error)
        }
        progress(.oldDeleted)
        try await offThePool { () throws(OutboxError) in
            do throws(Errno) {
                try fileSystem.removeFile(note)
                try fileSystem.synchronizeDirectory(directory)
            } catch {
                throw .storage(OutboxLogError(.io, "cannot remove the note of a finished re-key", file: note, errno: error))
            }
        }
        return true
    }

    /// Refuses to open a queue that a committed copy replaced (a re-key or
    /// sealing cut before the old queue was deleted): it is out of date.
    static func checkNotReplaced(_ directory: FilePath, root: FilePath, fileSystem: any FileSystem) async throws(OutboxError) {
        guard let name = directory.lastComponent?.string else { return }
        let replacedBy = try await offThePool { () throws(OutboxError) -> String? in
            let names = (try? fileSystem.contentsOfDirectory(PartitionDirectory.partitionsDirectory(root))) ?? []
            return names.first { other in
                guard other != name, other.hasPrefix(PartitionDirectory.prefix),
                    !other.hasSuffix(PartitionRewrite.temporarySuffix),
                    let note = try? SmallFile.read(
                        PartitionDirectory.path(root: root, name: other).appending(PartitionDirectory.previousFileName),
                        fileSystem: fileSystem)
                else { return false }
                return note == Array(name.utf8)
            }
        }
        if replacedBy != nil {
            throw OutboxError(
                .wrongKey, "this queue was replaced by a copy sealed under another key (a re-key, or a first open with a key); open it with that key (nothing was changed)")
        }
    }
}
