import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// Server side of the Idempotency-Key HTTP header
/// (draft-ietf-httpapi-idempotency-key-header): a request retried with the
/// same key runs once, and every repeat gets the first response back.
///
/// | Request | Response |
/// |---|---|
/// | first with a key | runs; its response is stored under the key |
/// | repeat, same request | the stored response, with `Idempotent-Replayed: true` |
/// | repeat while the first still runs | 409 Conflict |
/// | same key, different request (method, path, body) | 422 Unprocessable Content |
/// | no key where one is required | 400 Bad Request |
///
/// Keys are kept for ``Configuration/retention`` and then forgotten. Error
/// responses are RFC 9457 problem documents. 5xx responses are not stored
/// (the request may be retried); 2xx–4xx are.
public struct IdempotencyMiddleware<Context: RequestContext>: RouterMiddleware {
    public struct Configuration: Sendable {
        /// Methods that take part; others pass through untouched.
        public var methods: Set<HTTPRequest.Method> = [.post, .patch, .put, .delete]
        /// Whether a request of a taking-part method must carry a key.
        public var requireKey: @Sendable (Request) -> Bool = { _ in true }
        /// How long a key and its response are kept. Default 24 hours.
        public var retention: Duration = .seconds(24 * 3600)
        /// A request still running after this long is considered abandoned.
        public var staleAfter: Duration = .seconds(60)
        /// Largest request body fingerprinted (bigger bodies get 413).
        public var maximumBodySize = 1 << 20
        /// Largest response body stored for replay.
        public var maximumStoredResponse = 1 << 20
        /// The clock (tests move it to expire keys).
        public var now: @Sendable () -> Date = { Date() }

        public init() {}
    }

    public let store: any IdempotencyKeyStore
    public let configuration: Configuration

    public init(store: any IdempotencyKeyStore, configuration: Configuration = Configuration()) {
        self.store = store
        self.configuration = configuration
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard configuration.methods.contains(request.method) else { return try await next(request, context) }
        guard let raw = request.headers[IdempotencyHTTP.keyHeader] else {
            if configuration.requireKey(request) {
                return IdempotencyHTTP.problem(400, "missing-key", "An Idempotency-Key header is required for \(request.method) \(request.uri.path).")
            }
            return try await next(request, context)
        }
        guard let key = IdempotencyHTTP.parseKey(raw) else {
            return IdempotencyHTTP.problem(400, "invalid-key", "The Idempotency-Key must be a string of 1 to 255 visible characters.")
        }
        var request = request
        let body: ByteBuffer
        do { body = try await request.collectBody(upTo: configuration.maximumBodySize) } catch {
            return IdempotencyHTTP.problem(413, "body-too-large", "The request body exceeds \(configuration.maximumBodySize) bytes.")
        }
        let fingerprint = IdempotencyHTTP.fingerprint(request, body: body)
        let now = configuration.now()

        switch try await store.begin(key: key, fingerprint: fingerprint, now: now, staleAfter: configuration.staleAfter) {
        case .completed(let stored):
            return IdempotencyHTTP.replay(stored)
        case .inProgress:
            return IdempotencyHTTP.problem(409, "in-progress", "A request with this Idempotency-Key is still being processed; retry later.")
        case .fingerprintMismatch:
            return IdempotencyHTTP.problem(422, "key-reused", "This Idempotency-Key was already used for a different request.")
        case .proceed:
            break
        }

        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            try? await store.abandon(key: key)
            throw error
        }
        // 5xx: nothing definite happened; let a retry run again.
        guard response.status.code < 500 else {
            try? await store.abandon(key: key)
            return response
        }
        let (bytes, replayable) = try await IdempotencyHTTP.collect(response, limit: configuration.maximumStoredResponse)
        var headers: [String: String] = [:]
        for field in replayable.headers where IdempotencyHTTP.replayedFields.contains(field.name) {
            headers[field.name.canonicalName] = field.value
        }
        let stored = StoredResponse(status: Int(replayable.status.code), headers: headers, body: Array(buffer: bytes))
        let retention = Double(configuration.retention.components.seconds)
        do {
            try await store.complete(key: key, response: stored, now: now, expiresAt: now.addingTimeInterval(retention))
        } catch {
            // The effect happened but cannot be recorded: say so instead of
            // pretending, so the client retries (and the log shows why).
            context.logger.error("cannot store idempotent response", metadata: ["key": "\(key)", "error": "\(error)"])
            try? await store.abandon(key: key)
            return IdempotencyHTTP.problem(503, "store-unavailable", "The response could not be recorded; retry with the same key.")
        }
        return replayable
    }
}
