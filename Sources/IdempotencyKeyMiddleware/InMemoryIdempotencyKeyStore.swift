import Foundation
import OutboxLocking

/// Keys in memory: for tests and throwaway servers that may forget keys on
/// restart (a retry after a restart runs the request again). For anything
/// else use ``LogIdempotencyKeyStore`` or a store on your own database.
///
/// Keys are chosen by clients; the table is a `Dictionary` keyed by the key
/// string, whose hashing (`Hasher`, SipHash) is seeded per process, so a
/// client cannot pick keys that collide.
public final class InMemoryIdempotencyKeyStore: IdempotencyKeyStore {
    private let records = Locked<[String: KeyRecord]>([:])
    /// The most keys held at once (in progress, completed or unsettled);
    /// `nil` for no limit. At the limit a new key is refused
    /// (``IdempotencyBeginResult/atCapacity(retryAfter:)``) until one expires.
    public let maximumKeys: Int?

    public init(maximumKeys: Int? = nil) {
        precondition(maximumKeys.map { $0 > 0 } ?? true, "maximumKeys must be positive")
        self.maximumKeys = maximumKeys
    }

    public func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult {
        records.withLock { records in
            let existing = records[key]
            switch KeyRecord.decide(existing, key: key, fingerprint: fingerprint, now: now, claim: claim) {
            case .answer(let result):
                return result
            case .abandonClaim(let unsettled):
                records[key]?.state = .outcomeUnknown(since: unsettled.since, expiresAt: unsettled.expiresAt, reason: .claimAbandoned)
                return .outcomeUnknown(unsettled)
            case .claim:
                if existing == nil, let maximumKeys, records.count >= maximumKeys {
                    records = records.filter { !$0.value.isExpired(at: now) }
                    if records.count >= maximumKeys { return .atCapacity(retryAfter: Self.untilFirstExpiry(records, now: now)) }
                }
                records[key] = KeyRecord(fingerprint: fingerprint, state: .inProgress(since: now, owner: claim.owner, expiresAt: claim.expiresAt))
                return .proceed
            }
        }
    }

    /// How long until the first key that can expire does (at least 1 s).
    private static func untilFirstExpiry(_ records: [String: KeyRecord], now: Date) -> Duration {
        let first = records.values.lazy.filter { if case .inProgress = $0.state { false } else { true } }.map(\.expiresAt).min()
        let seconds = first.map { $0.timeIntervalSince(now) } ?? 60
        return .seconds(max(1, seconds.rounded(.up)))
    }

    public func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        records.withLock { records in
            guard let record = records[key] else { return }
            records[key] = KeyRecord(fingerprint: record.fingerprint, state: .completed(response, expiresAt: expiresAt))
        }
    }

    public func abandon(key: String, owner: String) async throws {
        records.withLock { records in
            if case .inProgress(_, let holder, _) = records[key]?.state, holder == owner { records[key] = nil }
        }
    }

    public func settleUnknown(key: String, owner: String, now: Date, expiresAt: Date) async throws {
        records.withLock { records in
            guard case .inProgress(let since, let holder, _) = records[key]?.state, holder == owner else { return }
            records[key]?.state = .outcomeUnknown(since: since, expiresAt: expiresAt, reason: .responseNotRecorded)
        }
    }

    public func resolve(key: String, as resolution: IdempotencyResolution, now: Date) async throws {
        try records.withLock { records in
            guard let record = records[key], case .outcomeUnknown = record.state, !record.isExpired(at: now) else {
                throw IdempotencyKeyStoreError(.notUnsettled, "the outcome of key \(key) is not unknown")
            }
            switch resolution {
            case .applied(let response, let expiresAt):
                records[key] = KeyRecord(fingerprint: record.fingerprint, state: .completed(response, expiresAt: expiresAt))
            case .notApplied:
                records[key] = nil
            }
        }
    }

    public func unsettledKeys(now: Date, limit: Int) async throws -> [IdempotencyUnsettledKey] {
        records.withLock { records in
            records.compactMap { $0.value.isExpired(at: now) ? nil : $0.value.unsettled(key: $0.key) }
        }
        .sorted { ($0.since, $0.key) < ($1.since, $1.key) }
        .prefix(max(0, limit)).map { $0 }
    }

    public func expire(now: Date) async throws -> Int {
        records.withLock { records in
            let before = records.count
            records = records.filter { !$0.value.isExpired(at: now) }
            return before - records.count
        }
    }

    /// Keys currently held (in progress, completed or unsettled; expired or not).
    public var count: Int { records.withLock { $0.count } }
}
