import Crypto
import OutboxLocking
import OutboxLog
import SystemPackage
import OutboxModel

/// The payload files of one queue, in `<queue>/payloads/` (0700), one file
/// (0600) per entry whose body is above the store's threshold, named by the
/// entry's log key (a keyed hash of its id when the store is encrypted) and
/// the file's random id: `<32 hex>-<32 hex>` (Docs/STORE-FORMAT.md, "Payload files").
///
/// The order of operations is what makes them crash-safe with the log
/// (Docs/DURABILITY.md, "Payload files"):
/// - a file is created under a fresh name, written, synced, and its
///   directory synced, **before** the entry that references it is handed
///   to the log: an entry never points at a file that a crash can lose;
/// - a file is deleted only once the record that ended its entry is
///   durable: an entry that a power loss brings back still has its file;
/// - at open, a file that no live entry references is removed (a crash
///   between the two steps of either order leaves one). A file that is
///   missing or damaged is found when its entry is delivered, which
///   quarantines the entry.
///
/// Every method blocks: callers run them off the cooperative pool.
final class PayloadFileStore: Sendable {
    static let directoryName = "payloads"
    /// Plaintext bytes per sealed chunk.
    static let sealedChunkSize = 64 << 10

    let directory: FilePath
    let fileSystem: any FileSystem
    let format: RecordFormat
    /// The torture suite's kill points (`package` configuration).
    let observe: @Sendable (PayloadFileStep) -> Void
    /// Whether `payloads/` is known to exist durably (created, and its
    /// parent synced, by this process or found at open).
    private let directoryReady = Locked(false)

    init(queue: FilePath, fileSystem: any FileSystem, format: RecordFormat, observe: @escaping @Sendable (PayloadFileStep) -> Void) {
        directory = queue.appending(Self.directoryName)
        self.fileSystem = fileSystem
        self.format = format
        self.observe = observe
    }

    /// The file of entry `id` that `reference` names.
    func path(of reference: PayloadFileReference, id: OutboxEntryID) -> FilePath {
        directory.appending(Self.fileName(entryKey: format.entryKey(id), fileID: reference.fileID))
    }

    /// `<entry key without its prefix, hex>-<file id, hex>`.
    static func fileName(entryKey: LogKey, fileID: [UInt8]) -> String {
        LowercaseHex.encode(entryKey.bytes.dropFirst()) + "-" + LowercaseHex.encode(fileID)
    }

    /// The entry key and file id a file name holds; `nil` for another name.
    static func parse(_ name: String) -> (entryKey: LogKey, fileID: [UInt8])? {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let key = LowercaseHex.decode(parts[0], count: 16),
            let fileID = LowercaseHex.decode(parts[1], count: 16)
        else { return nil }
        return (LogKey([RecordFormat.entryPrefix] + key), fileID)
    }

    /// What reads `reference`'s file back for entry `id`.
    func handle(_ reference: PayloadFileReference, id: OutboxEntryID) -> OutboxLargePayload {
        OutboxLargePayload(
            source: PayloadFileReader(
                path: path(of: reference, id: id), reference: reference, fileSystem: fileSystem,
                cipher: cipher(reference.fileID, id: id)))
    }

    private func cipher(_ fileID: [UInt8], id: OutboxEntryID) -> PayloadFileCipher? {
        format.sealer.map { PayloadFileCipher(sealer: $0, partition: format.partition, entryKey: format.entryKey(id), fileID: fileID) }
    }

    // MARK: Writing

    /// Writes `payload` for entry `id` into a new file, synced with its
    /// directory; returns what the entry records. On failure the partial
    /// file is removed and nothing refers to it.
    func write(_ payload: [UInt8], for id: OutboxEntryID) throws(OutboxError) -> PayloadFileReference {
        try prepareDirectory()
        let fileID = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let sealed = format.isSealed
        let reference = PayloadFileReference(
            layout: sealed ? .sealed : .plain, fileID: fileID, length: UInt64(payload.count),
            chunkSize: sealed ? UInt32(Self.sealedChunkSize) : 0, digest: Array(SHA256.hash(data: payload)))
        let file = path(of: reference, id: id)
        let descriptor: FileDescriptor
        do { descriptor = try fileSystem.openFile(file, mode: .createNew) } catch {
            throw Self.ioFailure("cannot create a payload file", file, error)
        }
        observe(.fileCreated)
        // close(2) releases the descriptor even when it reports an error:
        // it is never closed twice (its number may already be another file's).
        var closed = false
        do throws(OutboxError) {
            if let cipher = cipher(fileID, id: id) {
                try writeSealed(payload, to: descriptor, cipher: cipher, reference: reference, file: file)
            } else {
                try Self.io("cannot write a payload file", file) { () throws(Errno) in try fileSystem.writeFully(descriptor, payload, at: 0) }
            }
            observe(.fileWritten)
            // A failed sync is never retried: the file is dropped with the enqueue.
            try Self.io("cannot sync a payload file", file) { () throws(Errno) in try fileSystem.synchronize(descriptor) }
            observe(.fileSynced)
            closed = true
            try Self.io("cannot close a payload file", file) { () throws(Errno) in try fileSystem.close(descriptor) }
        } catch {
            if !closed { try? fileSystem.close(descriptor) }
            try? fileSystem.removeFile(file)
            throw error
        }
        do throws(OutboxError) {
            try Self.io("cannot sync the payload directory", directory) { () throws(Errno) in
                try fileSystem.synchronizeDirectory(directory)
            }
        } catch {
            try? fileSystem.removeFile(file)
            throw error
        }
        observe(.directorySynced)
        return reference
    }

    /// Seals `payload` chunk by chunk, about 1 MiB of boxes per write.
    private func writeSealed(
        _ payload: [UInt8], to descriptor: FileDescriptor, cipher: PayloadFileCipher, reference: PayloadFileReference,
        file: FilePath
    ) throws(OutboxError) {
        let chunk = Int(reference.chunkSize)
        let chunks = reference.chunkCount
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * (chunk + RecordSealer.overhead))
        var written: Int64 = 0
        for index in 0..<chunks {
            let start = index * chunk
            buffer += try cipher.seal(payload[start..<min(start + chunk, payload.count)], index: index, isLast: index == chunks - 1)
            if buffer.count >= 16 * chunk || index == chunks - 1 {
                let bytes = buffer
                let at = written
                try Self.io("cannot write a payload file", file) { () throws(Errno) in try fileSystem.writeFully(descriptor, bytes, at: at) }
                written += Int64(buffer.count)
                buffer.removeAll(keepingCapacity: true)
            }
        }
    }

    /// Makes `payloads/` exist durably: created (0700) if missing, and its
    /// parent synced, once per store.
    private func prepareDirectory() throws(OutboxError) {
        if directoryReady.withLock({ $0 }) { return }
        do throws(Errno) {
            do { try fileSystem.createDirectory(directory) } catch where error == .fileExists {}
            // Synced even if another writer created it: its sync may not have happened yet.
            try fileSystem.synchronizeDirectory(directory.removingLastComponent())
        } catch {
            throw Self.ioFailure("cannot create the payload directory", directory, error)
        }
        directoryReady.withLock { $0 = true }
    }

    /// The whole payload of `reference`'s file, checked (blocking).
    func read(_ reference: PayloadFileReference, id: OutboxEntryID) throws(OutboxError) -> [UInt8] {
        let reader = PayloadFileReader(
            path: path(of: reference, id: id), reference: reference, fileSystem: fileSystem,
            cipher: cipher(reference.fileID, id: id))
        let payload = try reader.readBlocking(from: 0, count: Int(reference.length))
        guard Array(SHA256.hash(data: payload)) == reference.digest else { throw reader.failure(nil, .digestMismatch) }
        return payload
    }

    // MARK: Removing

    /// Deletes `files` (of entries that ended, or were never recorded),
    /// then syncs the directory once. A file already gone is fine.
    func remove(_ files: [FilePath]) throws(OutboxError) {
        guard !files.isEmpty else { return }
        for file in files {
            do throws(Errno) { try fileSystem.removeFile(file) } catch where error == .noSuchFileOrDirectory {} catch {
                throw Self.ioFailure("cannot delete a payload file", file, error)
            }
            observe(.fileRemoved)
        }
        try Self.io("cannot sync the payload directory", directory) { () throws(Errno) in try fileSystem.synchronizeDirectory(directory) }
        observe(.removalSynced)
    }

    // MARK: Recovery

    /// Moves `name`, which no store writes in `payloads/` (a directory),
    /// to `damaged/payloads+<name>` in the queue's directory, synced; left
    /// where it is if that fails (it is reported either way). Blocking.
    func moveAside(_ name: String) {
        let damaged = directory.removingLastComponent().appending("damaged")
        do throws(Errno) {
            do { try fileSystem.createDirectory(damaged) } catch where error == .fileExists {}
            try fileSystem.rename(directory.appending(name), to: damaged.appending("payloads+" + name))
            try fileSystem.synchronizeDirectory(damaged)
            try fileSystem.synchronizeDirectory(directory)
        } catch {
            return
        }
    }

    /// The names in `payloads/` (none if it does not exist).
    func names() throws(OutboxError) -> [String] {
        do {
            let names = try fileSystem.contentsOfDirectory(directory)
            directoryReady.withLock { $0 = true }
            return names.sorted()
        } catch {
            if error == .noSuchFileOrDirectory { return [] }
            throw Self.ioFailure("cannot list the payload directory", directory, error)
        }
    }

    // MARK: Errors

    private static func io(_ what: String, _ file: FilePath, _ body: () throws(Errno) -> Void) throws(OutboxError) {
        do { try body() } catch { throw ioFailure(what, file, error) }
    }

    private static func ioFailure(_ what: String, _ file: FilePath, _ errno: Errno) -> OutboxError {
        .storage(OutboxLogError(.io, what, file: file, errno: errno))
    }
}

/// The steps of writing and deleting a payload file, in order, for the
/// torture suite's kill points.
package enum PayloadFileStep: String, Sendable, CaseIterable {
    /// The file exists, empty.
    case fileCreated
    /// Its bytes are written, not yet synced.
    case fileWritten
    /// The file is synced; its directory entry is not yet.
    case fileSynced
    /// The directory is synced: the entry may now be written.
    case directorySynced
    /// A file of an ended entry is unlinked, the directory not yet synced.
    case fileRemoved
    /// The directory is synced after deletions.
    case removalSynced
}
