import Crypto
import OutboxLog
import SystemPackage
import OutboxModel

/// Copies a queue into a new directory in another ``RecordFormat`` — to seal
/// a plain queue, or to re-encrypt one under a new key — and puts it in
/// place with one rename.
///
/// The copy is built in `<target>.rewrite`, synced, closed, and renamed to
/// `<target>`; the partitions directory is synced after the rename. That
/// rename is the commit point: before it the source is the queue (and a
/// half-built copy is deleted by the next attempt); after it the copy is,
/// and the caller then deletes the source. Whoever finds both the source
/// and a committed target finishes by deleting the source: the target holds
/// everything the source held when the copy began, and nothing wrote to the
/// source since (the copier held its lock throughout).
enum PartitionRewrite {
    static let temporarySuffix = ".rewrite"
    /// Carries the source log's next sequence number, so entry sequence
    /// numbers keep increasing across a rewrite that leaves fewer records.
    static let sequenceFloorKey: LogKey = "Q"

    /// Copies every live record of `source`, read as `sourceFormat`, into a
    /// new queue at `target` in `targetFormat` (with a key check sealed
    /// under `targetKey`), and commits it.
    static func copy(
        _ source: OutboxLog, as sourceFormat: RecordFormat, to target: FilePath, as targetFormat: RecordFormat,
        targetKey: SymmetricKey?, configuration: OutboxLog.Configuration,
        beforeCommit: @escaping @Sendable (FilePath) throws(OutboxError) -> Void = { _ in },
        progress: @Sendable (RekeyStep) -> Void = { _ in }
    ) async throws(OutboxError) {
        let temporary = FilePath(target.string + temporarySuffix)
        let fileSystem = configuration.fileSystem
        do { try await OutboxLog.destroy(at: temporary, fileSystem: fileSystem) } catch { throw .storage(error) }
        var logConfiguration = configuration
        logConfiguration.createIfMissing = true
        logConfiguration.automaticCompactionRatio = nil
        let copy: OutboxLog
        do { copy = try await OutboxLog.open(at: temporary, configuration: logConfiguration) } catch { throw .storage(error) }
        let files = PayloadFileCopy(
            source: PayloadFileStore(queue: source.directory, fileSystem: fileSystem, format: sourceFormat, observe: { _ in }),
            target: PayloadFileStore(queue: temporary, fileSystem: fileSystem, format: targetFormat, observe: { _ in }))
        do throws(OutboxError) {
            if let targetKey {
                let canary = try KeyCheck(key: targetKey).sealCanary(partition: targetFormat.partition)
                try await append(copy, [.value(RecordFormat.canaryKey, canary)])
            }
            try await append(copy, [.value(sequenceFloorKey, littleEndian(source.statistics.nextSequence))])
            var after: UInt64 = 0
            while true {
                let page: [LogEntry]
                do { page = try await source.entries(after: after, limit: 1024) } catch { throw OutboxError.storage(error) }
                guard let last = page.last else { break }
                after = last.sequence
                for record in page {
                    // A body and its state in one batch, as the store writes them.
                    try await append(copy, try await files.translate(record))
                    progress(.copying)
                }
            }
            // Spooled records the source set aside go with it, in the new format.
            let setAside = (
                SetAsideRecords(queue: source.directory, format: sourceFormat, fileSystem: fileSystem),
                SetAsideRecords(queue: temporary, format: targetFormat, fileSystem: fileSystem)
            )
            try await offThePool { () throws(OutboxError) in try setAside.0.copy(to: setAside.1) }
            do { try await copy.sync() } catch { throw OutboxError.storage(error) }
            do { try await copy.close() } catch { throw OutboxError.storage(error) }
        } catch {
            try? await copy.close()
            try? await OutboxLog.destroy(at: temporary, fileSystem: fileSystem)
            throw error
        }
        try await offThePool { () throws(OutboxError) in try beforeCommit(temporary) }
        progress(.copied)
        try await offThePool { () throws(OutboxError) in
            do throws(Errno) {
                try fileSystem.rename(temporary, to: target)
                try fileSystem.synchronizeDirectory(target.removingLastComponent())
            } catch {
                throw .storage(OutboxLogError(.io, "cannot put the rewritten queue in place", file: target, errno: error))
            }
        }
    }

    /// ``copy`` into `target`, a queue directory that replaces the one named
    /// `previous`: before the commit the copy gets its `PARTITION` file
    /// (sealed under `targetKey`) and a `PREVIOUS` file naming `previous`, so
    /// that opens refuse that queue until it is deleted.
    static func copy(
        _ source: OutboxLog, as sourceFormat: RecordFormat, replacing previous: String, to target: FilePath,
        as targetFormat: RecordFormat, targetKey: SymmetricKey, configuration: OutboxLog.Configuration,
        progress: @Sendable (RekeyStep) -> Void = { _ in }
    ) async throws(OutboxError) {
        let fileSystem = configuration.fileSystem
        let partition = targetFormat.partition
        let targetName = target.lastComponent?.string ?? ""
        try await copy(
            source, as: sourceFormat, to: target, as: targetFormat, targetKey: targetKey, configuration: configuration,
            beforeCommit: { temporary throws(OutboxError) in
                try PartitionDirectory.writeName(partition, directory: temporary, name: targetName, key: targetKey, fileSystem: fileSystem)
                try SmallFile.write(
                    Array(previous.utf8), to: temporary.appending(PartitionDirectory.previousFileName),
                    fileSystem: fileSystem, replacing: true)
            },
            progress: progress)
    }

    /// The records of `record` in the target format (none for the key check
    /// and the sequence floor, which the copy writes itself).
    static func translate(
        _ record: LogEntry, from source: RecordFormat, to target: RecordFormat, payloadFile: PayloadFileReference? = nil
    ) throws(OutboxError) -> [LogWrite] {
        let key = record.key
        guard key.count == 17 else { return [] }
        switch key.bytes[0] {
        case RecordFormat.entryPrefix:
            var plain = try source.plainBody(record.value, key: key)
            if let payloadFile {
                // Its payload file was copied (and sealed) under a new reference.
                var body = try EntryCodec.decode(plain)
                body.payloadFile = payloadFile
                plain = EntryCodec.encode(body)
            }
            let id = OutboxEntryID(bytes: Array(plain[2..<18]))
            let newKey = target.entryKey(id)
            var writes: [LogWrite] = [.value(newKey, try target.storedBody(plain, id: id))]
            if let annotation = record.annotation {
                let state = try source.plainState(annotation.payload, key: key)
                writes.append(.annotation(newKey, try target.storedState(state, key: newKey)))
            }
            return writes
        case RecordFormat.completionPrefix:
            let (id, plain) = try source.plainCompletion(record.value, key: key)
            return [.value(target.completionKey(id), try target.storedCompletion(plain, id: id))]
        default:
            return []
        }
    }

    private static func append(_ log: OutboxLog, _ writes: [LogWrite]) async throws(OutboxError) {
        guard !writes.isEmpty else { return }
        do { _ = try await log.append(writes, durability: .buffered) } catch { throw .storage(error) }
    }

    static func littleEndian(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
}

/// Copies the payload files of a queue being rewritten (``PartitionRewrite``)
/// into the copy's `payloads/`, in the copy's format: read and checked from
/// the source, written and synced in the target before the body that
/// references them. A file that is missing or damaged in the source is not
/// copied: its entry keeps its reference, and the copy's first open
/// quarantines it (as the source's would have).
struct PayloadFileCopy: Sendable {
    let source: PayloadFileStore
    let target: PayloadFileStore

    /// `record` in the target format, its payload file copied first.
    func translate(_ record: LogEntry) async throws(OutboxError) -> [LogWrite] {
        let (from, to) = (source.format, target.format)
        guard let (id, file) = try payloadFile(of: record) else {
            return try PartitionRewrite.translate(record, from: from, to: to)
        }
        let (source, target) = (self.source, self.target)
        return try await offThePool { () throws(OutboxError) in
            let copied: PayloadFileReference
            do throws(OutboxError) { copied = try target.write(try source.read(file, id: id), for: id) } catch where error.code == .damagedPayload {
                return try PartitionRewrite.translate(record, from: from, to: to)
            }
            return try PartitionRewrite.translate(record, from: from, to: to, payloadFile: copied)
        }
    }

    /// The entry and payload file of a body record, if it has one.
    private func payloadFile(of record: LogEntry) throws(OutboxError) -> (OutboxEntryID, PayloadFileReference)? {
        guard record.key.count == 17, record.key.bytes[0] == RecordFormat.entryPrefix else { return nil }
        let header = try EntryCodec.decodeHeader(try source.format.plainBody(record.value, key: record.key))
        return header.body.payloadFile.map { (header.body.id, $0) }
    }
}

/// The steps of a re-key, in order, for a test that kills the process at
/// each (`outbox rekey --kill-self-at`).
package enum RekeyStep: String, Sendable, CaseIterable {
    /// After each record copied into the new queue (before its commit).
    case copying
    /// The new queue is complete and synced, not yet in place.
    case copied
    /// The new queue is in place (renamed, directory synced); the old one
    /// still exists.
    case committed
    /// The old queue is deleted; the new one still names it as its previous.
    case oldDeleted
}
