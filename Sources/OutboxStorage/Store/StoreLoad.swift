import OutboxLog
import SystemPackage
import OutboxModel

/// Rebuilding a queue's scheduler from its log: from every entry (``full``),
/// or from the store checkpoint plus the entries whose records changed
/// after it (``fromCheckpoint``). Both end the same way — each live entry
/// loaded from its body and its state record — so a checkpointed reopen
/// rebuilds exactly what a full one would (`StoreCheckpointTests`).
enum StoreLoad {
    /// Loads every entry and completion; returns the sequence floor a
    /// rewrite carried over (0 if none).
    static func full(
        _ log: OutboxLog, into scheduler: inout Scheduler, format: RecordFormat
    ) async throws(OutboxError) -> UInt64 {
        var after: UInt64 = 0
        var floor: UInt64 = 0
        while true {
            let page: [LogEntry]
            do { page = try await log.entries(after: after, limit: 4096) } catch { throw .storage(error) }
            guard let last = page.last else { return floor }
            after = last.sequence
            for record in page { floor = max(floor, try apply(record, to: &scheduler, format: format) ?? 0) }
        }
    }

    /// Loads `checkpoint`'s body, then, for every key written after its
    /// position, forgets what the checkpoint said and loads what the log
    /// holds now. Returns the sequence floor, or `nil` if the checkpoint
    /// cannot be used after all (its body does not verify, or the log no
    /// longer holds the history after it): then `scheduler` is to be
    /// discarded and the caller loads ``full``.
    static func fromCheckpoint(
        _ checkpoint: StoreCheckpoint, file: FilePath, fileSystem: any FileSystem, log: OutboxLog,
        into scheduler: inout Scheduler, format: RecordFormat
    ) async throws(OutboxError) -> UInt64? {
        let partition = scheduler.partition
        let configuration = scheduler.configuration
        let decoded = try await offThePool { () throws(OutboxError) -> (Scheduler, StoreCheckpointBody.LogKeys)? in
            var restored = Scheduler(partition: partition, configuration: configuration)
            do {
                let body = try checkpoint.readBody(file, format: format, fileSystem: fileSystem)
                let keys = try StoreCheckpointBody.decode(
                    body, into: &restored, nextSequence: checkpoint.nextSequence, sealed: format.isSealed)
                return (restored, keys)
            } catch {
                return nil
            }
        }
        guard let (restored, logKeys) = decoded else { return nil }
        let changed: Set<LogKey>?
        do { changed = try await log.changedKeys() } catch { throw .storage(error) }
        guard let changed else { return nil }
        scheduler = restored
        var floor: UInt64 = 0
        let keys = Array(changed)
        for start in stride(from: 0, to: keys.count, by: 512) {
            let batch = Array(keys[start..<min(start + 512, keys.count)])
            let records: [LogEntry?]
            do { records = try await log.get(batch) } catch { throw .storage(error) }
            for (key, record) in zip(batch, records) {
                forget(key, in: &scheduler, format: format, logKeys: logKeys)
                if let record { floor = max(floor, try apply(record, to: &scheduler, format: format) ?? 0) }
            }
        }
        return floor
    }

    /// Forgets what the checkpoint loaded under `key`, if anything.
    private static func forget(
        _ key: LogKey, in scheduler: inout Scheduler, format: RecordFormat, logKeys: StoreCheckpointBody.LogKeys
    ) {
        let bytes = key.bytes
        guard bytes.count == 17 else { return }
        let suffix = Array(bytes[1...])
        switch bytes[0] {
        case RecordFormat.entryPrefix:
            if let id = format.isSealed ? logKeys.entries[suffix] : OutboxEntryID(bytes: suffix) { scheduler.unload(id) }
        case RecordFormat.completionPrefix:
            if let id = format.isSealed ? logKeys.completions[suffix] : OutboxEntryID(bytes: suffix) {
                scheduler.unloadCompletion(id)
            }
        default:
            break
        }
    }

    /// Loads one live record (an entry's body and state, or a completion);
    /// returns the sequence floor if it is the rewrite's floor record.
    static func apply(_ record: LogEntry, to scheduler: inout Scheduler, format: RecordFormat) throws(OutboxError) -> UInt64? {
        let key = record.key
        switch key.bytes.first {
        case RecordFormat.entryPrefix where key.count == 17:
            let header = try EntryCodec.decodeHeader(try format.plainBody(record.value, key: key))
            let body = header.body
            guard body.partition == format.partition else {
                throw OutboxError(.corruptEntry, "an entry of another partition in \(format.partition)'s queue", entry: body.id)
            }
            var metadata = EntryMetadata(
                id: body.id, sequence: body.sequence, status: .pending, priority: body.priority, attempts: 0,
                maxAttempts: body.maxAttempts, scope: scheduler.intern(body.scope),
                type: scheduler.intern(body.type), coalescing: scheduler.intern(body.coalescingKey),
                when: EntryMetadata.immediately, createdAt: body.createdAt, storedBytes: UInt32(clamping: LogBackend.storedBytes(record: record.value.count, file: body.payloadFile)),
                dependencies: body.dependencies.isEmpty ? nil : body.dependencies)
            var failure: FailureInfo?
            if let annotation = record.annotation {
                let state: EntryCodec.State
                do { state = try EntryCodec.decodeState(try format.plainState(annotation.payload, key: key)) } catch {
                    throw error.about(body.id)
                }
                metadata.status = state.status
                metadata.attempts = state.attempts
                metadata.when = state.when
                failure = state.failure
                if let cause = failure?.dependency, !cause.fits(metadata) {
                    throw OutboxError(.corruptEntry, "a dependency failure no store records for this entry", entry: body.id)
                }
            }
            scheduler.load(
                metadata, failure: failure, unchanged: record.annotation == nil,
                appKey: body.keySuppliedByApp ? body.idempotencyKey : nil)
        case RecordFormat.completionPrefix where key.count == 17:
            let (id, plain) = try format.plainCompletion(record.value, key: key)
            scheduler.loadCompletion(id, try EntryCodec.decodeCompletion(plain))
        default:
            if key == PartitionRewrite.sequenceFloorKey, record.value.count == 8 {
                return record.value.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
            }
        }
        return nil  // the key check, or a floor of another size
    }
}
