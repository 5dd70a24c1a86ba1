import Foundation
import OutboxLog
import SystemPackage

extension LogIdempotencyKeyStore {
    /// Opens (creating if needed) the store in `directory`.
    ///
    /// Reads each sealed segment's index file and scans only the active
    /// segment, so an open costs about 28 bytes read per stored key. Claims
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
        let legacy = try await LegacyKeyMigration.read(directory, fileSystem: configuration.fileSystem, now: now)
        let store = try await withCheckedThrowingContinuation { continuation in
            // Blocking file I/O: off the cooperative pool.
            let thread = Thread {
                continuation.resume(with: Result { try openBlocking(at: directory, configuration: configuration, now: now) })
            }
            thread.name = "idempotency-journal-open"
            thread.start()
        }
        if let legacy { try await LegacyKeyMigration.finish(legacy, into: store) }
        return store
    }

    private static func openBlocking(at directory: FilePath, configuration: Configuration, now: Date) throws -> LogIdempotencyKeyStore {
        let fileSystem = configuration.fileSystem
        try io("create \(directory)") {
            do { try fileSystem.createDirectory(directory) } catch let error as Errno where error == .fileExists {}
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
    /// The index is walked once per removal (about 10 ms per million keys).
    public func expire(now: Date) async throws -> Int {
        let nowSeconds = JournalFormat.nowSeconds(now)
        let (forgotten, segments) = try state.withLock { state -> (Int, [UInt32]) in
            let before = state.unsettled.count
            state.unsettled = state.unsettled.filter { !$0.value.isExpired(at: now) }
            // A quiet server's active segment may hold only expired records:
            // seal it so it can go too.
            if let stats = state.segments[writer.activeSegment], stats.maxExpires <= nowSeconds,
                stats.bytes > Int64(JournalFormat.segmentHeaderSize)
            {
                try writer.roll()
            }
            let segments = state.expiredSegments(now: nowSeconds, active: writer.activeSegment)
            guard !segments.isEmpty else { return (before - state.unsettled.count, []) }
            let removed = Set(segments)
            let indexed = state.index.count
            state.index = state.index.filter { !removed.contains($0.value.segment) }
            for id in segments { state.totalBytes -= state.segments.removeValue(forKey: id)?.bytes ?? 0 }
            return (before - state.unsettled.count + indexed - state.index.count, segments)
        }
        if !segments.isEmpty { try await writer.wait(for: try writer.remove(segments: segments), durable: false) }
        return forgotten
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
