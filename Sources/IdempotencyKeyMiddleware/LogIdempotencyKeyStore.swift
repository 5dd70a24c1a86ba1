import Foundation
import OutboxLog
import OutboxLocking
import SystemPackage

/// Keys in an ``OutboxLog``: the durable default. Completed responses
/// survive a server restart (they are made durable before the response is
/// sent); in-progress claims are kept in memory only, so a crash releases
/// them (the request that held one died with the process).
///
/// Expired keys are deleted, not just ignored: ``expire(now:)`` (which
/// ``IdempotencyMiddleware`` calls periodically) writes a tombstone for each,
/// and ``open(at:configuration:now:)-(FilePath,_,_)`` deletes the ones that expired while
/// the server was down instead of loading them. The log's automatic
/// compaction then reclaims their space. Live keys and their responses are
/// held in memory, so memory is bounded by the keys of one retention window.
///
/// What it cannot do alone: make a handler's effect and the stored response
/// one atomic write. A crash between the two re-runs the request on retry.
/// For that, implement ``IdempotencyKeyStore`` on the database your handler
/// writes to.
public final class LogIdempotencyKeyStore: IdempotencyKeyStore {
    let log: OutboxLog
    private let records: Locked<[String: KeyRecord]>

    private init(log: OutboxLog, records: [String: KeyRecord]) {
        self.log = log
        self.records = Locked(records)
    }

    /// A record in the log that this version cannot read.
    public struct UnreadableRecord: Error, CustomStringConvertible {
        public var key: String
        public var reason: String
        public var description: String { "cannot read the stored idempotency key \(key): \(reason)" }
    }

    /// Opens (creating if needed) the store in `directory`.
    ///
    /// Keys that expired at or before `now`, and in-progress claims (which a
    /// store never writes, so a foreign tool must have), are deleted from the
    /// log rather than loaded.
    ///
    /// - Throws: ``OutboxLogError`` from the log, or ``UnreadableRecord`` if a
    ///   record cannot be decoded (nothing is dropped silently: a lost key
    ///   could let a retry apply a write twice).
    public static func open(
        at directory: FilePath, configuration: OutboxLog.Configuration = .init(), now: Date = Date()
    ) async throws -> LogIdempotencyKeyStore {
        let log = try await OutboxLog.open(at: directory, configuration: configuration)
        do {
            let records = try await loadLive(from: log, now: now)
            return LogIdempotencyKeyStore(log: log, records: records)
        } catch {
            try? await log.close()
            throw error
        }
    }

    /// The unexpired records of `log`; expired ones are deleted from it.
    /// (Its own function: with the loop inline, `open`'s error handling
    /// crashed Swift 6.3's optimizer.)
    private static func loadLive(from log: OutboxLog, now: Date) async throws -> [String: KeyRecord] {
        var records: [String: KeyRecord] = [:]
        var dropped: [LogKey] = []
        var after: UInt64 = 0
        while true {
            let page = try await log.entries(after: after, limit: 1024)
            guard let last = page.last else { break }
            after = last.sequence
            for entry in page {
                guard let key = String(validating: entry.key.bytes, as: UTF8.self) else { continue }  // not ours
                let record = try decode(entry.value, key: key)
                if let expiresAt = record.expiresAt, expiresAt > now {
                    records[key] = record
                } else {
                    dropped.append(entry.key)
                }
            }
        }
        for start in stride(from: 0, to: dropped.count, by: 1024) {
            let chunk = dropped[start..<min(start + 1024, dropped.count)]
            try await log.append(chunk.map { LogWrite.tombstone($0) }, durability: .written)
        }
        return records
    }

    private static func decode(_ bytes: [UInt8], key: String) throws -> KeyRecord {
        do {
            return try JSONDecoder().decode(KeyRecord.self, from: Data(bytes))
        } catch {
            throw UnreadableRecord(key: key, reason: "\(error)")
        }
    }

    public func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult {
        records.withLock { records in
            let previous = records[key]
            let (result, claimed) = KeyRecord.decide(previous, fingerprint: fingerprint, now: now, claim: claim)
            if claimed {
                // An expired response is replaced: delete it from the log now
                // (in the same order as this change), so it is gone even if
                // this claim is abandoned. Best effort: one left behind is
                // dropped at the next open.
                if previous?.expiresAt != nil, log.contains(LogKey(key)) { _ = try? log.submit([.tombstone(LogKey(key))]) }
                records[key] = KeyRecord(fingerprint: fingerprint, state: .inProgress(since: now, owner: claim.owner))
            }
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

    public func abandon(key: String, owner: String) async throws {
        records.withLock { records in
            if case .inProgress(_, let holder) = records[key]?.state, holder == owner { records[key] = nil }
        }
    }

    public func expire(now: Date) async throws -> Int {
        let (count, ticket) = try records.withLock { records -> (Int, LogTicket?) in
            let expired = records.filter { $0.value.isExpired(at: now) }.map(\.key)
            // Submitted under the lock, so the log's order matches memory's;
            // in batches of 1024 records.
            var ticket: LogTicket?
            for start in stride(from: 0, to: expired.count, by: 1024) {
                let chunk = expired[start..<min(start + 1024, expired.count)]
                ticket = try log.submit(chunk.map { LogWrite.tombstone(LogKey($0)) })
                for key in chunk { records[key] = nil }
            }
            return (expired.count, ticket)
        }
        try await ticket?.wait(for: .written)
        return count
    }

    /// Keys currently held (in progress or completed).
    public var count: Int { records.withLock { $0.count } }

    /// Writes everything and releases the log.
    public func close() async throws { try await log.close() }
}
