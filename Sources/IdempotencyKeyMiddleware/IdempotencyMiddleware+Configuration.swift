import Foundation
import HTTPTypes
import Hummingbird

extension IdempotencyMiddleware {
    /// How the middleware treats requests and keys.
    public struct Configuration: Sendable {
        /// Methods that take part; others pass through untouched.
        public var methods: Set<HTTPRequest.Method> = [.post, .patch, .put, .delete]
        /// Whether a request of a taking-part method must carry a key.
        public var requireKey: @Sendable (Request) -> Bool = { _ in true }
        /// How long a key and its response are kept after the request
        /// completes. Default 24 hours.
        public var retention: Duration = .seconds(24 * 3600)
        /// How often expired keys are deleted from the store: the first
        /// request after this interval (by ``now``) calls
        /// ``IdempotencyKeyStore/expire(now:)`` before it is handled. `nil`
        /// turns the sweep off (expired keys are then only ignored, never
        /// deleted, unless you call `expire` yourself). Default 5 minutes.
        public var expiryInterval: Duration? = .seconds(300)
        /// The owner recorded on every key this middleware claims. Claims of
        /// the same owner are never stale; see ``staleAfter``.
        public var serverInstance: String = IdempotencyServerInstance.current
        /// An in-progress claim left by *another* server instance (a process
        /// that crashed, or another instance sharing a database) is treated
        /// as abandoned once it is this old. A request this process is still
        /// running is never re-run, however long it takes. A claim's age is
        /// counted from when the request's body had been read, not from its
        /// head: a slow upload is not claimed already stale. Default 60 s.
        public var staleAfter: Duration = .seconds(60)
        /// The `Retry-After` of the 409 answered while the same key is still
        /// in progress (whole seconds, rounded up). Default 1 second.
        public var inProgressRetryAfter: Duration = .seconds(1)
        /// The `Retry-After` of the 503 answered when the key store cannot
        /// record a claim (``IdempotencyProblem/storeUnavailable``; the
        /// request was not run). Default 1 second.
        public var unavailableRetryAfter: Duration = .seconds(1)
        /// The `Retry-After` of the 503 answered for a key whose outcome is
        /// unknown (``IdempotencyProblem/outcomeUnknown``): how often a
        /// client should ask again while an operator may resolve the key.
        /// Default 60 seconds.
        public var outcomeUnknownRetryAfter: Duration = .seconds(60)
        /// Largest request body fingerprinted (bigger bodies get 413, and the
        /// connection is closed rather than the rest read; see
        /// ``IdempotencyProblem/bodyTooLarge``).
        public var maximumBodySize = 1 << 20
        /// Largest response body stored for replay. A larger response is
        /// still sent in full to the first request, but the key stores a
        /// ``IdempotencyProblem/responseNotStored`` problem (410) instead, so
        /// a repeat gets a clear error, never a truncated body. Default
        /// 1 MiB. With ``LogIdempotencyKeyStore`` keep it under its
        /// `maximumRecordSize` (2 MiB by default) less the key, headers and
        /// about a hundred bytes of framing: the body is stored as is.
        public var maximumStoredResponse = 1 << 20
        /// The clock for claims, retention and the expiry sweep (tests move
        /// it to expire keys). A claim's time is read once the request's
        /// body has been read.
        public var now: @Sendable () -> Date = { Date() }

        public init() {}
    }
}
