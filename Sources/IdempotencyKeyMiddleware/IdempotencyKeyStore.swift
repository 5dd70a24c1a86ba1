import Foundation

/// What a store says when a request with a key arrives.
public enum IdempotencyBeginResult: Sendable, Hashable {
    /// First time (or the key expired): the request runs, and the store now
    /// holds the key as in progress for the claiming owner. The claim was
    /// recorded before this returned: a store that cannot record it throws
    /// instead, and the request is refused before its handler runs.
    case proceed
    /// The same key with the same request is still running.
    case inProgress
    /// The same key was used for a different request.
    case fingerprintMismatch
    /// The same request already completed: replay this response.
    case completed(StoredResponse)
    /// A handler ran for this key (or may have: its server stopped while it
    /// ran) but no response was recorded. The request is never run again
    /// under this key: repeats get ``IdempotencyProblem/outcomeUnknown``
    /// until the key expires or an operator resolves it
    /// (``IdempotencyKeyStore/resolve(key:as:now:)``).
    case outcomeUnknown(IdempotencyUnsettledKey)
    /// The store holds as many keys as it is allowed to and none of them has
    /// expired yet, so it cannot take a new one without forgetting a live
    /// key early (which could apply a write twice). Nothing was claimed; the
    /// request is refused with 503 and `Retry-After: retryAfter`.
    case atCapacity(retryAfter: Duration)
}

/// Who claims a key, until when, and when a claim made by someone else
/// counts as abandoned.
///
/// A claim held by the *same* owner is never stale: the middleware of that
/// server process is still running the request (it completes, releases or
/// settles the claim the moment the handler returns or throws). A claim left
/// by another owner — a server process that crashed, or another instance
/// sharing a database — is answered "in progress" until it is
/// ``staleAfter`` old, and from then on "outcome unknown": its handler may
/// have applied the write, so it is never run again.
public struct IdempotencyClaim: Sendable, Hashable {
    /// The server process making the claim; the middleware passes
    /// ``IdempotencyServerInstance/current`` unless configured otherwise.
    public var owner: String
    /// How old another owner's in-progress claim must be before it is
    /// treated as abandoned (outcome unknown). Make it longer than the
    /// longest a request may run on any instance.
    public var staleAfter: Duration
    /// When the claim may be forgotten if it is never completed (a claim
    /// whose outcome became unknown is kept until then). The middleware
    /// passes the claim's time plus ``IdempotencyMiddleware/Configuration/retention``.
    public var expiresAt: Date

    public init(owner: String, staleAfter: Duration, expiresAt: Date = .distantFuture) {
        self.owner = owner
        self.staleAfter = staleAfter
        self.expiresAt = expiresAt
    }
}

/// A key whose request ran, or may have, without a recorded response.
public struct IdempotencyUnsettledKey: Sendable, Hashable, Codable {
    public var key: String
    /// When the request was claimed.
    public var since: Date
    /// When the key is forgotten unless resolved first.
    public var expiresAt: Date
    /// Why the outcome is unknown.
    public var reason: IdempotencyUnknownReason

    public init(key: String, since: Date, expiresAt: Date, reason: IdempotencyUnknownReason) {
        self.key = key
        self.since = since
        self.expiresAt = expiresAt
        self.reason = reason
    }
}

/// Why a key's outcome is unknown.
public enum IdempotencyUnknownReason: String, Sendable, Hashable, Codable {
    /// The handler returned a response, but the store could not record it.
    case responseNotRecorded = "response-not-recorded"
    /// The server that claimed the key stopped (crashed, was killed) while
    /// the request ran; found when the store was reopened.
    case serverStopped = "server-stopped"
    /// Another server instance's claim went stale while its request ran.
    case claimAbandoned = "claim-abandoned"
}

/// An operator's answer for a key whose outcome is unknown.
public enum IdempotencyResolution: Sendable, Hashable {
    /// The write was applied: repeats are answered with `response` (stored
    /// like a completed request's, kept for the store's retention).
    case applied(StoredResponse, expiresAt: Date)
    /// The write was not applied: the key is forgotten, and the next request
    /// with it runs.
    case notApplied
}

/// Why a store refused an operation. Stores may throw their own errors too;
/// the middleware answers any error from ``IdempotencyKeyStore/begin(key:fingerprint:now:claim:)``
/// with 503 before the handler runs.
public struct IdempotencyKeyStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// ``IdempotencyKeyStore/resolve(key:as:now:)`` of a key whose outcome is not unknown.
        case notUnsettled = "not-unsettled"
        /// A response larger than the store keeps in one record.
        case responseTooLarge = "response-too-large"
        /// The store failed an earlier write and accepts no more until reopened.
        case poisoned
        /// The store was closed.
        case closed
        /// Another live key has the same index digest (2⁻⁹⁶ per pair): the
        /// key is refused rather than confused with it.
        case digestCollision = "digest-collision"
        /// A stored record could not be read back intact.
        case damaged
        /// The store's directory is open in another process.
        case locked
        /// A file operation failed while opening the store.
        case io
        /// A configuration value is out of range.
        case invalidArgument = "invalid-argument"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// Where the middleware keeps keys.
///
/// The built-in stores are ``InMemoryIdempotencyKeyStore`` (tests, throwaway
/// servers) and ``LogIdempotencyKeyStore`` (the durable default: a compact
/// on-disk key store on ``OutboxLog``). A store on a shared database (PostgreSQL, say)
/// implements the same calls, each one statement or transaction.
///
/// The rule every implementation keeps: **a handler runs at most once per
/// key.** A claim is recorded before ``begin(key:fingerprint:now:claim:)``
/// returns ``IdempotencyBeginResult/proceed``; from then on the key is in
/// progress, completed or outcome-unknown until it expires, is released by
/// its owner (``abandon(key:owner:)``, when the handler applied nothing), or
/// is resolved by an operator.
///
/// Durable stores should let concurrent calls share one sync (group commit):
/// the middleware calls them from many requests at once.
public protocol IdempotencyKeyStore: Sendable {
    /// Atomically claims `key` for a request with `fingerprint` on behalf of
    /// `claim.owner`, unless a live record for it exists.
    ///
    /// - A completed record that expired at or before `now` is replaced, and
    ///   so is an unsettled one (in progress or outcome unknown) past its
    ///   `expiresAt`.
    /// - An in-progress record of the same owner is never replaced.
    /// - An in-progress record of another owner is ``IdempotencyBeginResult/inProgress``
    ///   until it is `claim.staleAfter` old, then
    ///   ``IdempotencyBeginResult/outcomeUnknown(_:)``.
    /// - A store at its capacity answers ``IdempotencyBeginResult/atCapacity(retryAfter:)``
    ///   for a key it would have to add, without claiming it.
    /// - Throws if the claim cannot be recorded; nothing is claimed then.
    func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult
    /// Stores the response of a claimed key; kept until `expiresAt`. Throws
    /// if it cannot be recorded (the claim then stays in place).
    func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws
    /// Releases `owner`'s claim on `key` after its request failed without
    /// applying anything (the handler threw or answered 5xx). A claim since
    /// taken over by another owner, or a completed record, is left alone.
    func abandon(key: String, owner: String) async throws
    /// Records that `owner`'s claim on `key` ran but its response could not
    /// be stored: the key is answered outcome-unknown until `expiresAt`.
    /// Stores keep this in memory even when they cannot make it durable
    /// (and then throw, so the caller knows it may not survive a restart).
    func settleUnknown(key: String, owner: String, now: Date, expiresAt: Date) async throws
    /// An operator's resolution of a key whose outcome is unknown. Throws
    /// ``IdempotencyKeyStoreError/Code/notUnsettled`` for any other key.
    func resolve(key: String, as resolution: IdempotencyResolution, now: Date) async throws
    /// Keys whose outcome is unknown, oldest first, at most `limit`.
    func unsettledKeys(now: Date, limit: Int) async throws -> [IdempotencyUnsettledKey]
    /// Forgets every key that expired at or before `now` (and reclaims its
    /// space); returns how many. ``IdempotencyMiddleware`` calls it at most
    /// once per ``IdempotencyMiddleware/Configuration/expiryInterval``.
    @discardableResult
    func expire(now: Date) async throws -> Int
}
