import Foundation
import OutboxLog
import SystemPackage

extension LogIdempotencyKeyStore {
    /// Opens (creating if needed, with any missing parents) the store in
    /// `directory`.
    ///
    /// The log reads its index checkpoint and the records written after it,
    /// not every record. Claims left by a server that stopped mid-request
    /// are loaded as outcome-unknown
    /// (``IdempotencyUnknownReason/serverStopped``); expired unsettled keys
    /// are not loaded.
    ///
    /// - Throws: ``IdempotencyKeyStoreError``: `.locked` if another process
    ///   has the directory open, `.damaged` for damage in the log other than
    ///   a torn tail (nothing is dropped silently: a lost key could let a
    ///   retry apply a write twice; the message names the file and offset),
    ///   `.io` for a file operation that failed, `.invalidArgument` for a
    ///   configuration out of range.
    public static func open(
        at directory: FilePath, configuration: Configuration = Configuration(), now: Date = Date()
    ) async throws -> LogIdempotencyKeyStore {
        try configuration.validate()
        try await refuseEarlierJournal(in: directory, fileSystem: configuration.fileSystem)
        let log: OutboxLog
        do {
            log = try await OutboxLog.open(at: directory, configuration: configuration.logConfiguration)
        } catch {
            throw storeError(error)
        }
        do {
            // A log that holds records was keyed by a secret: making a new
            // one would make every stored key unreachable, and its retry
            // would run again.
            let holdsRecords = log.statistics.liveKeys > 0
            let secret = try await blocking { () throws(Errno) in
                try KeyStoreSecret.loadOrCreate(in: directory, fileSystem: configuration.fileSystem, mayCreate: !holdsRecords)
            }
            let (unsettled, report) = try await loadUnsettled(from: log, now: now)
            return LogIdempotencyKeyStore(
                directory: directory, configuration: configuration, digester: KeyDigester(secret: secret), log: log,
                unsettled: unsettled, recovery: report)
        } catch {
            try? await log.close()
            if let error = error as? Errno {
                throw error == .noSuchFileOrDirectory
                    ? IdempotencyKeyStoreError(
                        .damaged, "\(KeyStoreSecret.fileName) is missing from \(directory), whose log holds keys: they cannot be found without it")
                    : IdempotencyKeyStoreError(.io, "cannot read or make the digest secret in \(directory): \(error)")
            }
            throw storeError(error)
        }
    }

    /// The unsettled keys (found by their log keys' prefix, so only they are
    /// read), claims becoming outcome-unknown: their server stopped.
    private static func loadUnsettled(from log: OutboxLog, now: Date) async throws -> ([String: KeyRecord], KeyStoreRecoveryReport) {
        let keys = log.keys(withPrefix: [KeyStoreRecord.unsettledNamespace])
        var unsettled: [String: KeyRecord] = [:]
        for entry in try await log.get(keys) {
            guard let entry else { continue }
            guard let expiresAt = entry.expiresAt, let record = KeyStoreRecord.decode(entry.value), !record.isCompleted else {
                throw IdempotencyKeyStoreError(.damaged, "an unsettled key's record (sequence \(entry.sequence)) cannot be read")
            }
            guard expiresAt > now else { continue }
            var loaded = record.keyRecord(expiresAt: expiresAt)
            if case .inProgress(let since, _, let expiresAt) = loaded.state {
                loaded.state = .outcomeUnknown(since: since, expiresAt: expiresAt, reason: .serverStopped)
            }
            unsettled[record.key] = loaded
        }
        let report = KeyStoreRecoveryReport(
            log: log.recoveryReport, completedKeys: log.statistics.liveKeys - keys.count, unsettledKeys: unsettled.count)
        return (unsettled, report)
    }

    /// Refuses a directory written by the key journal this store replaced
    /// (`journal.secret`, `keys-*.journal`): opened as a log, its keys would
    /// be silently absent, and their retries would run again.
    private static func refuseEarlierJournal(in directory: FilePath, fileSystem: any FileSystem) async throws {
        let names = try await blocking { () throws(Errno) -> [String] in
            guard try fileSystem.itemKind(at: directory) == .directory else { return [] }
            return try fileSystem.contentsOfDirectory(directory)
        }
        if let found = names.first(where: { $0 == "journal.secret" || ($0.hasPrefix("keys-") && $0.hasSuffix(".journal")) }) {
            throw IdempotencyKeyStoreError(
                .invalidArgument,
                "\(directory) holds a key journal of an earlier version (\(found)), which this store does not read; "
                    + "move it aside or choose another directory")
        }
    }

    /// Runs blocking file I/O on a thread of its own, off the cooperative pool.
    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws(Errno) -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { () throws(Errno) -> T in try body() }) }
            thread.name = "idempotency-keys-open"
            thread.start()
        }
    }
}

extension LogIdempotencyKeyStore.Configuration {
    func validate() throws(IdempotencyKeyStoreError) {
        func require(_ condition: Bool, _ message: String) throws(IdempotencyKeyStoreError) {
            if !condition { throw IdempotencyKeyStoreError(.invalidArgument, message) }
        }
        try require(segmentSize >= 4096 && segmentSize <= 2 << 30, "segmentSize must be in 4 KiB...2 GiB")
        try require(
            maximumRecordSize >= 256 && maximumRecordSize <= OutboxLog.Configuration.absoluteMaximumRecordSize,
            "maximumRecordSize must be in 256 bytes...1 GiB")
        try require(maximumKeys.map { $0 > 0 } ?? true, "maximumKeys must be positive")
        try require(maximumBytes.map { $0 > 0 } ?? true, "maximumBytes must be positive")
    }

    /// The log under the store: its index checkpoint on (so a restart reads
    /// only what came after it), no automatic compaction (retention frees
    /// the space: every record expires).
    var logConfiguration: OutboxLog.Configuration {
        var log = OutboxLog.Configuration()
        log.segmentSize = segmentSize
        log.maximumRecordSize = max(maximumRecordSize, 256)
        log.fileSystem = fileSystem
        log.indexCheckpoints = true
        log.automaticCompactionRatio = nil
        // A replay reads a response up to a day old, likely not cached:
        // always on the log's reader threads, never the caller's (the
        // cooperative pool).
        log.readsInPlaceUpTo = 0
        return log
    }
}
