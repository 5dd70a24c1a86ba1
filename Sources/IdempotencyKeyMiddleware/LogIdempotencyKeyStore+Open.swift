import Foundation
import OutboxLog
import SystemPackage

extension LogIdempotencyKeyStore {
    /// Opens (creating if needed, with any missing parents) the store in
    /// `directory`.
    ///
    /// Reads each sealed segment's index file and scans only the active
    /// segment, so an open reads about 28 bytes per stored key. Claims
    /// left by a server that stopped mid-request are loaded as
    /// outcome-unknown (``IdempotencyUnknownReason/serverStopped``); expired
    /// keys are not loaded.
    ///
    /// - Throws: ``IdempotencyKeyStoreError`` (`.locked` if another process
    ///   has the directory open, `.io`), or ``JournalCorruption`` for damage
    ///   other than a torn tail (nothing is dropped silently: a lost key
    ///   could let a retry apply a write twice).
    public static func open(
        at directory: FilePath, configuration: Configuration = Configuration(), now: Date = Date()
    ) async throws -> LogIdempotencyKeyStore {
        try configuration.validate()
        return try await withCheckedThrowingContinuation { continuation in
            // Blocking file I/O: off the cooperative pool.
            let thread = Thread {
                continuation.resume(with: Result { try openBlocking(at: directory, configuration: configuration, now: now) })
            }
            thread.name = "idempotency-journal-open"
            thread.start()
        }
    }

    private static func openBlocking(at directory: FilePath, configuration: Configuration, now: Date) throws -> LogIdempotencyKeyStore {
        let fileSystem = configuration.fileSystem
        // A first launch creates missing parents too (0700 each, each synced
        // into its parent): /var/lib/<service> may not exist yet.
        do { try fileSystem.createDirectoryWithParents(directory) } catch {
            throw IdempotencyKeyStoreError(error.code == .invalidArgument ? .invalidArgument : .io, error.description)
        }
        let lock = try io("lock \(directory)") { try fileSystem.openFile(directory.appending("LOCK"), mode: .createOrOpen) }
        do {
            do { try fileSystem.lockExclusively(lock) } catch {
                throw IdempotencyKeyStoreError(.locked, "the key store in \(directory) is open in another process (\(error))")
            }
            let secret = try io("read the digest secret") { try JournalFiles.loadOrCreateSecret(in: directory, fileSystem: fileSystem) }
            let digester = KeyDigester(secret: secret)
            let names = try io("list \(directory)") { try fileSystem.contentsOfDirectory(directory) }
            var ids = names.compactMap(JournalFormat.segmentID(fromName:)).sorted()
            if ids.isEmpty {
                try io("create the first segment") { try fileSystem.close(try JournalFiles.createSegment(1, in: directory, fileSystem: fileSystem)) }
                ids = [1]
            }
            var recovery = JournalRecovery(directory: directory, fileSystem: fileSystem, digester: digester, now: now)
            do { try recovery.load(ids) } catch let error as Errno {
                throw IdempotencyKeyStoreError(.io, "cannot read the key journal in \(directory): \(error)")
            }
            let active = ids.last!
            let descriptor = try io("open the active segment") {
                try fileSystem.openFile(directory.appending(JournalFormat.segmentName(active)), mode: .readWrite)
            }
            var state = recovery.state
            if state.segments[active] == nil {
                state.segments[active] = JournalSegmentStats(bytes: recovery.activeEnd, maxExpires: 0)
                state.totalBytes += recovery.activeEnd
            }
            let writer = JournalWriter(
                directory: directory, fileSystem: fileSystem, segmentSize: configuration.segmentSize, segment: active,
                descriptor: descriptor, size: recovery.activeEnd, entries: recovery.activeEntries)
            return LogIdempotencyKeyStore(
                directory: directory, configuration: configuration, digester: digester, writer: writer, state: state, lock: lock,
                recovery: recovery.report)
        } catch {
            try? fileSystem.close(lock)
            throw error
        }
    }

    private static func io<T>(_ what: String, _ body: () throws -> T) throws(IdempotencyKeyStoreError) -> T {
        do { return try body() } catch { throw IdempotencyKeyStoreError(.io, "cannot \(what): \(error)") }
    }

    // MARK: Expiry

    /// Forgets every key that expired at or before `now`: unsettled keys past
    /// their expiry, and every segment (oldest first) whose records all
    /// expired, with its files. Returns how many keys were forgotten.
    ///
    /// The index entries of a removed segment are found through its index
    /// file, so the work is proportional to what is removed, not to the keys
    /// held.
    public func expire(now: Date) async throws -> Int {
        let nowSeconds = JournalFormat.nowSeconds(now)
        let (forgottenUnsettled, segments) = try state.withLock { state -> (Int, [UInt32]) in
            let before = state.unsettled.count
            state.unsettled = state.unsettled.filter { !$0.value.isExpired(at: now) }
            // A quiet server's active segment may hold only expired records:
            // seal it so it can go too.
            if let stats = state.segments[writer.activeSegment], stats.maxExpires <= nowSeconds,
                stats.bytes > Int64(JournalFormat.segmentHeaderSize)
            {
                try writer.roll()
            }
            return (before - state.unsettled.count, state.expiredSegments(now: nowSeconds, active: writer.activeSegment))
        }
        guard !segments.isEmpty else { return forgottenUnsettled }
        // Sealing (a roll just queued) writes the index file: let it finish.
        try await writer.wait(for: writer.lastSequence, durable: false)
        let entries = await readIndexFiles(of: segments)
        let forgotten = state.withLock { state -> Int in
            let indexed = state.index.count
            var unreadable: Set<UInt32> = []
            for (segment, digests) in zip(segments, entries) {
                guard let digests else {
                    unreadable.insert(segment)
                    continue
                }
                for digest in digests where state.index[digest.hash]?.segment == segment { state.index[digest.hash] = nil }
            }
            // An index file that cannot be read: walk the whole index instead.
            if !unreadable.isEmpty { state.index = state.index.filter { !unreadable.contains($0.value.segment) } }
            for id in segments { state.totalBytes -= state.segments.removeValue(forKey: id)?.bytes ?? 0 }
            return indexed - state.index.count
        }
        try await writer.wait(for: try writer.remove(segments: segments), durable: false)
        return forgottenUnsettled + forgotten
    }

    /// The digests of each segment's completed records, from its index file
    /// (`nil` where it cannot be read), read off the cooperative pool.
    private func readIndexFiles(of segments: [UInt32]) async -> [[KeyDigest]?] {
        let (directory, fileSystem) = (self.directory, configuration.fileSystem)
        return await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: segments.map { segment -> [KeyDigest]? in
                    guard let bytes = try? JournalFiles.readFile(directory.appending(JournalFormat.indexName(segment)), fileSystem: fileSystem),
                        let entries = JournalEntry.decodeIndexFile(bytes, segment: segment)
                    else { return nil }
                    return entries.filter { $0.kind == .complete }.map(\.digest)
                })
            }.start()
        }
    }
}

extension LogIdempotencyKeyStore.Configuration {
    func validate() throws(IdempotencyKeyStoreError) {
        func require(_ condition: Bool, _ message: String) throws(IdempotencyKeyStoreError) {
            if !condition { throw IdempotencyKeyStoreError(.invalidArgument, message) }
        }
        try require(segmentSize >= 4096 && segmentSize <= Int(UInt32.max), "segmentSize must be in 4 KiB...4 GiB")
        try require(maximumRecordSize >= 256, "maximumRecordSize must be at least 256 bytes")
        try require(maximumKeys.map { $0 > 0 } ?? true, "maximumKeys must be positive")
        try require(maximumBytes.map { $0 > 0 } ?? true, "maximumBytes must be positive")
    }
}
