import SystemPackage

/// Reads: the index says where, a pool thread reads and verifies.
extension LogCore {
    /// Where the live records of one key are.
    private enum Lookup {
        case absent
        case found(IndexEntry, SegmentFile, SegmentFile?)
    }

    /// The live value (and annotation) of `key`, verified, or `nil`.
    func get(_ key: LogKey) async throws(OutboxLogError) -> LogEntry? {
        try await get([key])[0]
    }

    /// The live value (and, with `annotations`, annotation) of each key,
    /// verified, or `nil`: one lookup under the lock and one job on a
    /// reader thread for all of them, so a batch costs one thread hand-off,
    /// not one per key. Without `annotations`, an annotation still in
    /// memory is neither waited for nor read.
    func get(_ keys: [LogKey], annotations: Bool = true) async throws(OutboxLogError) -> [LogEntry?] {
        guard !keys.isEmpty else { return [] }
        try await waitForIndex()
        /// Everything up to this sequence number was written out, and waited for.
        var flushedThrough: UInt64?
        while true {
            // Either every key's location, or the sequence number to write
            // out first because some record is still in memory.
            let lookups = try state.withLock { state throws(OutboxLogError) -> Result<[Lookup], UnwrittenRecords> in
                try state.checkReadable()
                var lookups: [Lookup] = []
                lookups.reserveCapacity(keys.count)
                for key in keys {
                    guard let entry = state.index.entries[key] else {
                        lookups.append(.absent)
                        continue
                    }
                    for location in [entry.value, entry.annotation] where location.exists {
                        guard state.slots[location.segment] != nil else {
                            throw OutboxLogError(.io, "internal error: the index points into a segment the log no longer has")
                        }
                    }
                    guard let valueFile = state.readableFile(for: entry.value) else {
                        return .failure(UnwrittenRecords(last: state.nextSequence - 1))
                    }
                    guard annotations, entry.annotation.exists else {
                        lookups.append(.found(entry, valueFile, nil))
                        continue
                    }
                    guard let annotationFile = state.readableFile(for: entry.annotation) else {
                        return .failure(UnwrittenRecords(last: state.nextSequence - 1))
                    }
                    lookups.append(.found(entry, valueFile, annotationFile))
                }
                return .success(lookups)
            }
            switch lookups {
            case .failure(let unwritten):
                // Once everything up to now is written, the records are
                // readable — unless a key was written again meanwhile, into
                // memory: then wait for that too. Only a record at or below
                // what was already waited for is an error.
                if let flushedThrough, unwritten.last <= flushedThrough {
                    throw OutboxLogError(.io, "internal error: a written record is not readable")
                }
                flushedThrough = unwritten.last
                try await waitFor(unwritten.last, durable: false)
            case .success(let lookups):
                var bytes = 0
                for case .found(let entry, _, let annotationFile) in lookups {
                    bytes += Int(entry.value.length) + (annotationFile != nil ? Int(entry.annotation.length) : 0)
                }
                guard bytes > 0 else { return Array(repeating: nil, count: keys.count) }
                let readAll: @Sendable () throws(OutboxLogError) -> [LogEntry?] = {
                    try zip(keys, lookups).map { (key, lookup) throws(OutboxLogError) -> LogEntry? in
                        guard case .found(let entry, let valueFile, let annotationFile) = lookup else { return nil }
                        return try Self.read(key, entry, valueFile, annotationFile)
                    }
                }
                // A few kilobytes, most likely still in the page cache (the
                // outbox reads the bodies it just claimed): read them here
                // rather than wake a reader thread and wait for it.
                if bytes <= configuration.readsInPlaceUpTo { return try readAll() }
                return try await readers.run(readAll)
            }
        }
    }

    /// Some record is still in memory; everything up to `last` must be written first.
    private struct UnwrittenRecords: Error {
        var last: UInt64
    }

    /// Reads and verifies the records `entry` points at (on a reader thread).
    private static func read(
        _ key: LogKey, _ entry: IndexEntry, _ valueFile: SegmentFile, _ annotationFile: SegmentFile?
    ) throws(OutboxLogError) -> LogEntry {
        let value = try valueFile.readRecord(
            at: Int64(entry.value.offset), length: Int(entry.value.length), expecting: key)
        var result = LogEntry(key: key, sequence: value.sequence, value: value.payload, expiry: value.expiry, annotation: nil)
        if let annotationFile {
            let annotation = try annotationFile.readRecord(
                at: Int64(entry.annotation.offset), length: Int(entry.annotation.length), expecting: key)
            result.annotation = .init(sequence: annotation.sequence, payload: annotation.payload, expiry: annotation.expiry)
        }
        return result
    }

    /// Whether `key` has a live value. Answers from memory.
    func contains(_ key: LogKey) -> Bool {
        waitForIndexBlocking()
        return state.withLock { $0.index.entries[key] != nil }
    }

    /// Every live key starting with `prefix`, in no particular order.
    func keys(withPrefix prefix: [UInt8]) -> [LogKey] {
        waitForIndexBlocking()
        return state.withLock { state in
            var keys: [LogKey] = []
            state.index.entries.forEach { element in
                if element.key.count >= prefix.count, element.key.withUnsafeBytes({ $0.starts(with: prefix) }) {
                    keys.append(element.key)
                }
            }
            return keys
        }
    }

    /// Every live key, in no particular order. Answers from memory.
    func keys() -> [LogKey] {
        waitForIndexBlocking()
        return state.withLock { $0.index.entries.keys }
    }

    /// Writes out buffered records so scans of the files see them.
    func flushIfPending() async throws(OutboxLogError) {
        let last = state.withLock { state -> UInt64? in
            state.writtenSequence < state.nextSequence - 1 ? state.nextSequence - 1 : nil
        }
        if let last { try await waitFor(last, durable: false) }
    }
}

extension LogState {
    func checkReadable() throws(OutboxLogError) {
        if let error = isAcceptingWrites { throw error }
    }
}
