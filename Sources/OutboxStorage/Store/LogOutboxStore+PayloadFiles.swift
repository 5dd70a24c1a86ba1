import OutboxLog
import SystemPackage
import OutboxModel

extension LogOutboxStore {
    /// At open, before anything is enqueued: each file in `payloads/` is
    /// kept if the body record of the entry its name holds references it,
    /// and removed otherwise — an orphan, written for an enqueue that a kill
    /// cut before its entry was recorded, or left by an entry whose end was
    /// durable just before a kill. Returns the ledger of the files kept.
    ///
    /// A store that never wrote a payload file pays one directory lookup.
    /// Only the records of the entries named by files are read.
    static func recoverPayloadFiles(
        _ payloadFiles: PayloadFileStore, log: OutboxLog
    ) async throws(OutboxError) -> (PayloadFileLedger, OutboxPayloadRecovery) {
        let names = try await offThePool { () throws(OutboxError) in try payloadFiles.names() }
        guard !names.isEmpty else { return (PayloadFileLedger(), OutboxPayloadRecovery()) }
        let parsed = names.map { ($0, PayloadFileStore.parse($0)) }
        let keys = parsed.compactMap { $0.1?.entryKey }
        let records: [LogEntry?]
        do { records = try await log.get(keys) } catch { throw .storage(error) }
        var referenced: [LogKey: [UInt8]] = [:]
        for (key, record) in zip(keys, records) {
            guard let record else { continue }
            let header = try EntryCodec.decodeHeader(try payloadFiles.format.plainBody(record.value, key: key))
            if let file = header.body.payloadFile { referenced[key] = file.fileID }
        }
        var kept: [LogKey: FilePath] = [:]
        var orphans: [String] = []
        for (name, parts) in parsed {
            // `payloads/` is the store's: a name that is not of its form
            // (a file renamed by hand, say) is no entry's either.
            if let parts, referenced[parts.entryKey] == parts.fileID {
                kept[parts.entryKey] = payloadFiles.directory.appending(name)
            } else {
                orphans.append(name)
            }
        }
        // Only files are deleted; anything else (a directory) was not written
        // by a store, and is moved aside rather than deleted or allowed to
        // fail the open.
        let (removed, movedAside) = try await offThePool { [orphans] () throws(OutboxError) -> ([String], [String]) in
            let kinds = orphans.map { (try? payloadFiles.fileSystem.itemKind(at: payloadFiles.directory.appending($0))) ?? nil }
            let files = zip(orphans, kinds).filter { $0.1 == .file }.map(\.0)
            let others = zip(orphans, kinds).filter { $0.1 == .directory }.map(\.0)
            try payloadFiles.remove(files.map { payloadFiles.directory.appending($0) })
            for name in others { payloadFiles.moveAside(name) }
            return (files, others)
        }
        return (PayloadFileLedger(files: kept), OutboxPayloadRecovery(removedOrphans: removed, movedAside: movedAside))
    }
}

extension LogOutboxStore {
    /// Waits until the payload files of the entries that ended so far are
    /// deleted (each once its entry's end is durable; ``close()`` waits
    /// for them too). For tests and the torture suite.
    package func payloadFileDeletionsSettled() async {
        await (core.backend as? LogBackend)?.ledger.settle()
    }
}
