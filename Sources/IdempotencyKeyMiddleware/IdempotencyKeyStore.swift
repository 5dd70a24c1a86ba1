import Foundation

/// What a store says when a request with a key arrives.
public enum IdempotencyBeginResult: Sendable, Hashable {
    /// First time (or the key expired, or another server instance's claim
    /// went stale): the request runs, and the store holds the key as in
    /// progress for the claiming owner.
    case proceed
    /// The same key with the same request is still running.
    case inProgress
    /// The same key was used for a different request.
    case fingerprintMismatch
    /// The same request already completed: replay this response.
    case completed(StoredResponse)
}

/// Who claims a key, and when a claim made by someone else counts as
/// abandoned.
///
/// A claim held by the *same* owner is never stale: the middleware of that
/// server process is still running the request (it releases or completes
/// the claim the moment the handler returns or throws), and running it a
/// second time could apply the write twice. Only a claim left by another
/// owner — a server process that crashed, or another instance sharing a
/// database — can be taken over, and only once it is older than
/// ``staleAfter``.
public struct IdempotencyClaim: Sendable, Hashable {
    /// The server process making the claim; the middleware passes
    /// ``IdempotencyServerInstance/current`` unless configured otherwise.
    public var owner: String
    /// How old another owner's in-progress claim must be before it is
    /// treated as abandoned. Make it longer than the longest a request may
    /// run on any instance.
    public var staleAfter: Duration

    public init(owner: String, staleAfter: Duration) {
        self.owner = owner
        self.staleAfter = staleAfter
    }
}

/// Where the middleware keeps keys. Implement it on your own database to get
/// exactly-once writes across server crashes: commit your handler's effect
/// and ``complete(key:response:now:expiresAt:)`` in one transaction.
///
/// The built-in stores are ``InMemoryIdempotencyKeyStore`` (tests, throwaway
/// servers) and ``LogIdempotencyKeyStore`` (the durable default, on
/// `OutboxLog`).
public protocol IdempotencyKeyStore: Sendable {
    /// Atomically claims `key` for a request with `fingerprint` on behalf of
    /// `claim.owner`, unless a live record for it exists.
    ///
    /// - A completed record that expired at or before `now` is replaced.
    /// - An in-progress record of the same owner is never replaced.
    /// - An in-progress record of another owner is replaced once it is at
    ///   least `claim.staleAfter` old (see ``IdempotencyClaim``).
    func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult
    /// Stores the response of a claimed key; kept until `expiresAt`.
    func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws
    /// Releases `owner`'s claim on `key` after its request failed without a
    /// response to keep. A claim since taken over by another owner, or a
    /// completed record, is left alone.
    func abandon(key: String, owner: String) async throws
    /// Forgets every completed key that expired at or before `now`; returns
    /// how many. ``IdempotencyMiddleware`` calls it at most once per
    /// ``IdempotencyMiddleware/Configuration/expiryInterval``.
    @discardableResult
    func expire(now: Date) async throws -> Int
}
