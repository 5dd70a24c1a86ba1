import Foundation

/// A response stored under an idempotency key, to replay to repeats.
public struct StoredResponse: Sendable, Hashable, Codable {
    public var status: Int
    /// Headers worth replaying (content type, location, …), lower-case names.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// What a store says when a request with a key arrives.
public enum IdempotencyBeginResult: Sendable, Hashable {
    /// First time (or the key expired, or an earlier attempt was abandoned):
    /// the request runs, and the store holds the key as in progress.
    case proceed
    /// The same key with the same request is still running.
    case inProgress
    /// The same key was used for a different request.
    case fingerprintMismatch
    /// The same request already completed: replay this response.
    case completed(StoredResponse)
}

/// Where the middleware keeps keys. Implement it on your own database to get
/// exactly-once writes across server crashes: commit your handler's effect
/// and ``complete(key:response:now:)`` in one transaction.
public protocol IdempotencyKeyStore: Sendable {
    /// Atomically claims `key` for a request with `fingerprint`, unless a
    /// live record for it exists. An in-progress claim older than
    /// `staleAfter` is treated as abandoned.
    func begin(key: String, fingerprint: [UInt8], now: Date, staleAfter: Duration) async throws -> IdempotencyBeginResult
    /// Stores the response of a claimed key; kept until `expiresAt`.
    func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws
    /// Releases a claim whose request failed without a response to keep.
    func abandon(key: String) async throws
    /// Forgets every key that expired before `now`; returns how many.
    @discardableResult
    func expire(now: Date) async throws -> Int
}

/// One key's record, as the built-in stores keep it.
struct KeyRecord: Sendable, Hashable, Codable {
    enum State: Sendable, Hashable, Codable {
        case inProgress(since: Date)
        case completed(StoredResponse, expiresAt: Date)
    }

    var fingerprint: [UInt8]
    var state: State

    /// The decision for a new request, given this record (or none).
    static func decide(
        _ record: KeyRecord?, fingerprint: [UInt8], now: Date, staleAfter: Duration
    ) -> (IdempotencyBeginResult, claim: Bool) {
        guard let record else { return (.proceed, true) }
        switch record.state {
        case .completed(let response, let expiresAt):
            if expiresAt <= now { return (.proceed, true) }
            return record.fingerprint == fingerprint ? (.completed(response), false) : (.fingerprintMismatch, false)
        case .inProgress(let since):
            let seconds = Double(staleAfter.components.seconds) + Double(staleAfter.components.attoseconds) / 1e18
            if now.timeIntervalSince(since) >= seconds { return (.proceed, true) }
            return record.fingerprint == fingerprint ? (.inProgress, false) : (.fingerprintMismatch, false)
        }
    }
}
