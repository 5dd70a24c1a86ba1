import Foundation
import OutboxLocking

/// Keys in memory: for tests and throwaway servers that may forget keys on
/// restart (a retry after a restart runs the request again). For anything
/// else use ``LogIdempotencyKeyStore`` or a store on your own database.
public final class InMemoryIdempotencyKeyStore: IdempotencyKeyStore {
    private let records = Locked<[String: KeyRecord]>([:])

    public init() {}

    public func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult {
        records.withLock { records in
            let (result, claimed) = KeyRecord.decide(records[key], fingerprint: fingerprint, now: now, claim: claim)
            if claimed { records[key] = KeyRecord(fingerprint: fingerprint, state: .inProgress(since: now, owner: claim.owner)) }
            return result
        }
    }

    public func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        records.withLock { records in
            guard let record = records[key] else { return }
            records[key] = KeyRecord(fingerprint: record.fingerprint, state: .completed(response, expiresAt: expiresAt))
        }
    }

    public func abandon(key: String, owner: String) async throws {
        records.withLock { records in
            if case .inProgress(_, let holder) = records[key]?.state, holder == owner { records[key] = nil }
        }
    }

    public func expire(now: Date) async throws -> Int {
        records.withLock { records in
            let expired = records.filter { $0.value.isExpired(at: now) }.map(\.key)
            for key in expired { records[key] = nil }
            return expired.count
        }
    }

    /// Keys currently held (in progress or completed, expired or not).
    public var count: Int { records.withLock { $0.count } }
}
