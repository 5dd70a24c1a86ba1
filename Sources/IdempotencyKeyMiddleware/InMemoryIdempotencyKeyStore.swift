import Foundation
import Synchronization

/// Keys in memory: for tests and single-process servers that may forget
/// keys on restart.
public final class InMemoryIdempotencyKeyStore: IdempotencyKeyStore {
    private let records = Mutex<[String: KeyRecord]>([:])

    public init() {}

    public func begin(key: String, fingerprint: [UInt8], now: Date, staleAfter: Duration) async throws -> IdempotencyBeginResult {
        records.withLock { records in
            let (result, claim) = KeyRecord.decide(records[key], fingerprint: fingerprint, now: now, staleAfter: staleAfter)
            if claim { records[key] = KeyRecord(fingerprint: fingerprint, state: .inProgress(since: now)) }
            return result
        }
    }

    public func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        records.withLock { records in
            guard let record = records[key] else { return }
            records[key] = KeyRecord(fingerprint: record.fingerprint, state: .completed(response, expiresAt: expiresAt))
        }
    }

    public func abandon(key: String) async throws {
        records.withLock { records in
            if case .inProgress = records[key]?.state { records[key] = nil }
        }
    }

    public func expire(now: Date) async throws -> Int {
        records.withLock { records in
            let expired = records.filter { if case .completed(_, let at) = $0.value.state { at <= now } else { false } }
            for key in expired.keys { records[key] = nil }
            return expired.count
        }
    }

    /// Keys currently held.
    public var count: Int { records.withLock { $0.count } }
}
