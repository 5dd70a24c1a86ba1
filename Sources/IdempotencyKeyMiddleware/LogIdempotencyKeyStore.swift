import Foundation
import OutboxLog
import Synchronization
import SystemPackage

/// Keys in an ``OutboxLog``: completed responses survive a server restart
/// (they are made durable before the response is sent); in-progress claims
/// are kept in memory only, so a crash releases them.
///
/// What it cannot do alone: make a handler's effect and the stored response
/// one atomic write. A crash between the two re-runs the request on retry.
/// For that, implement ``IdempotencyKeyStore`` on the database your handler
/// writes to.
public final class LogIdempotencyKeyStore: IdempotencyKeyStore {
    private let log: OutboxLog
    private let records = Mutex<[String: KeyRecord]>([:])

    private init(log: OutboxLog, records: [String: KeyRecord]) {
        self.log = log
        self.records.withLock { $0 = records }
    }

    /// Opens (creating if needed) the store in `directory`.
    public static func open(at directory: FilePath, configuration: OutboxLog.Configuration = .init()) async throws -> LogIdempotencyKeyStore {
        let log = try await OutboxLog.open(at: directory, configuration: configuration)
        var records: [String: KeyRecord] = [:]
        let decoder = JSONDecoder()
        for try await entry in log.allEntries() {
            guard let key = String(validating: entry.key.bytes, as: UTF8.self) else { continue }
            records[key] = try decoder.decode(KeyRecord.self, from: Data(entry.value))
        }
        return LogIdempotencyKeyStore(log: log, records: records)
    }

    public func begin(key: String, fingerprint: [UInt8], now: Date, staleAfter: Duration) async throws -> IdempotencyBeginResult {
        records.withLock { records in
            let (result, claim) = KeyRecord.decide(records[key], fingerprint: fingerprint, now: now, staleAfter: staleAfter)
            if claim { records[key] = KeyRecord(fingerprint: fingerprint, state: .inProgress(since: now)) }
            return result
        }
    }

    public func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        guard let fingerprint = records.withLock({ $0[key]?.fingerprint }) else { return }
        let record = KeyRecord(fingerprint: fingerprint, state: .completed(response, expiresAt: expiresAt))
        // Durable before the response leaves: a retry after a lost response
        // must find it, even after a crash.
        try await log.put(LogKey(key), Array(try JSONEncoder().encode(record)), durability: .durable)
        records.withLock { $0[key] = record }
    }

    public func abandon(key: String) async throws {
        records.withLock { records in
            if case .inProgress = records[key]?.state { records[key] = nil }
        }
    }

    public func expire(now: Date) async throws -> Int {
        let expired = records.withLock { records -> [String] in
            let keys = records.compactMap { key, record -> String? in
                if case .completed(_, let at) = record.state, at <= now { return key }
                return nil
            }
            for key in keys { records[key] = nil }
            return keys
        }
        if !expired.isEmpty {
            try await log.append(expired.map { LogWrite.tombstone(LogKey($0)) }, durability: .written)
        }
        return expired.count
    }

    public func close() async throws { try await log.close() }
}
