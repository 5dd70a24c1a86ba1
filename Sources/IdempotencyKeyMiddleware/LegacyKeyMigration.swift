import Foundation
import OutboxLog
import SystemPackage

/// Moves the keys of a store written by an earlier version (one JSON record
/// per key in an ``OutboxLog``) into the key journal, at the first open.
///
/// Crash-safe by order: the live keys are imported as completed records and
/// synced before the old log's files are deleted; a crash in between imports
/// them again at the next open (the later record of a key wins, and both
/// carry the same response).
enum LegacyKeyMigration {
    /// A completed key of the old format.
    struct Key: Sendable {
        var key: String
        var fingerprint: [UInt8]
        var response: StoredResponse
        var expiresAt: Date
    }

    /// The old record's JSON shape (Swift's synthesized coding).
    private struct OldRecord: Decodable {
        enum State: Decodable {
            case inProgress(since: Date, owner: String)
            case completed(StoredResponse, expiresAt: Date)
        }
        var fingerprint: [UInt8]
        var state: State
    }

    /// The old log's unexpired keys, or `nil` if `directory` holds none of
    /// its segments.
    static func read(_ directory: FilePath, fileSystem: any FileSystem, now: Date) async throws -> [Key]? {
        guard (try? fileSystem.contentsOfDirectory(directory))?.contains(where: { $0.hasSuffix(".seg") }) == true else { return nil }
        var configuration = OutboxLog.Configuration()
        configuration.fileSystem = fileSystem
        configuration.automaticCompactionRatio = nil
        let log = try await OutboxLog.open(at: directory, configuration: configuration)
        var keys: [Key] = []
        do {
            for try await entry in log.allEntries() {
                guard let key = String(checkedUTF8: entry.key.bytes) else { continue }
                let record: OldRecord
                do { record = try JSONDecoder().decode(OldRecord.self, from: Data(entry.value)) } catch {
                    throw IdempotencyKeyStoreError(.damaged, "cannot read the stored idempotency key \(key) of the old format: \(error)")
                }
                if case .completed(let response, let expiresAt) = record.state, expiresAt > now {
                    keys.append(Key(key: key, fingerprint: record.fingerprint, response: response, expiresAt: expiresAt))
                }
            }
        } catch {
            try? await log.close()
            throw error
        }
        try await log.close()
        return keys
    }

    /// Imports `keys` durably, then deletes the old log's files.
    static func finish(_ keys: [Key], into store: LogIdempotencyKeyStore) async throws {
        for key in keys {
            try await store.importCompleted(key.key, fingerprint: key.fingerprint, response: key.response, expiresAt: key.expiresAt)
        }
        let fileSystem = store.configuration.fileSystem
        for name in try fileSystem.contentsOfDirectory(store.directory) where name.hasSuffix(".seg") || name == "COMPACTION" {
            try fileSystem.removeFile(store.directory.appending(name))
        }
        try fileSystem.synchronizeDirectory(store.directory)
    }
}

extension LogIdempotencyKeyStore {
    /// Records `key` as completed with `response` (migration only).
    func importCompleted(_ key: String, fingerprint: [UInt8], response: StoredResponse, expiresAt: Date) async throws {
        let record = JournalRecord.complete(key: key, fingerprint: fingerprint, response: response, expiresAt: expiresAt)
        let digest = digester.digest(key)
        let (location, sequence) = try state.withLock { state in
            try appendLocated(record, digest: digest, &state)
        }
        try await writer.wait(for: sequence, durable: true)
        state.withLock { state in
            state.index[digest.hash] = JournalSlot(
                check: digest.check, segment: location.segment, offset: location.offset, length: location.length,
                expires: JournalFormat.expirySeconds(expiresAt))
        }
    }
}
