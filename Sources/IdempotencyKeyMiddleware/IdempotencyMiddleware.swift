import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Server side of the Idempotency-Key HTTP header
/// (draft-ietf-httpapi-idempotency-key-header): a request retried with the
/// same key runs once, and every repeat gets the first response back.
///
/// | Request | Response |
/// |---|---|
/// | first with a key | runs; its response is stored under the key |
/// | repeat, same request | the stored response, with `Idempotent-Replayed: true` |
/// | repeat while the first still runs | 409 Conflict with `Retry-After` (``IdempotencyProblem/inProgress``) |
/// | same key, different request (method, path, body) | 422 Unprocessable Content |
/// | no key where one is required, or a malformed one | 400 Bad Request |
/// | repeat of a request whose response was too large to store | 410 Gone (``IdempotencyProblem/responseNotStored``) |
///
/// Keys are kept for ``Configuration/retention``, then deleted by a sweep
/// the requests trigger (at most once per ``Configuration/expiryInterval``).
/// Error responses are RFC 9457 problem documents (``IdempotencyProblem``).
/// 5xx responses are not stored (the request may be retried); 2xx–4xx are.
/// A request is never run twice at once: a key stays in progress for as long
/// as this process runs its request (see ``Configuration/staleAfter``).
public struct IdempotencyMiddleware<Context: RequestContext>: RouterMiddleware {
    public let store: any IdempotencyKeyStore
    public let configuration: Configuration
    private let sweeper = ExpirySweeper()

    public init(store: any IdempotencyKeyStore, configuration: Configuration = Configuration()) {
        self.store = store
        self.configuration = configuration
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let now = configuration.now()
        await sweepIfDue(now: now, logger: context.logger)
        guard configuration.methods.contains(request.method) else { return try await next(request, context) }
        guard let raw = request.headers[IdempotencyHTTP.keyHeader] else {
            if configuration.requireKey(request) {
                return IdempotencyProblem.missingKey.response(
                    detail: "An Idempotency-Key header is required for \(request.method) \(request.uri.path).")
            }
            return try await next(request, context)
        }
        guard let key = IdempotencyHTTP.parseKey(raw) else {
            return IdempotencyProblem.invalidKey.response(detail: "The Idempotency-Key must be a string of 1 to 255 visible characters.")
        }
        var request = request
        let body: ByteBuffer
        do { body = try await request.collectBody(upTo: configuration.maximumBodySize) } catch {
            return IdempotencyProblem.bodyTooLarge.response(detail: "The request body exceeds \(configuration.maximumBodySize) bytes.")
        }
        let fingerprint = IdempotencyHTTP.fingerprint(request, body: body)
        let owner = configuration.serverInstance

        switch try await store.begin(
            key: key, fingerprint: fingerprint, now: now, claim: IdempotencyClaim(owner: owner, staleAfter: configuration.staleAfter))
        {
        case .completed(let stored):
            return IdempotencyHTTP.replay(stored)
        case .inProgress:
            return IdempotencyProblem.inProgress(retryAfter: configuration.inProgressRetryAfter)
        case .fingerprintMismatch:
            return IdempotencyProblem.keyReused.response(detail: "This Idempotency-Key was already used for a different request.")
        case .proceed:
            break
        }

        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            try? await store.abandon(key: key, owner: owner)
            throw error
        }
        // 5xx: nothing definite happened; let a retry run again.
        guard response.status.code < 500 else {
            try? await store.abandon(key: key, owner: owner)
            return response
        }
        let bytes: ByteBuffer
        let replayable: Response
        do {
            (bytes, replayable) = try await IdempotencyHTTP.collect(response)
        } catch {
            // The handler ran, but its body failed: there is nothing to
            // replay, and running it again could apply the write twice.
            let stored = IdempotencyProblem.notStored(status: Int(response.status.code), reason: "its response body failed: \(error)")
            try? await complete(key: key, stored, owner: owner, logger: context.logger)
            throw error
        }
        let stored: StoredResponse
        if bytes.readableBytes > configuration.maximumStoredResponse {
            // Never replay a cut body: store a clear error for repeats.
            stored = IdempotencyProblem.notStored(
                status: Int(replayable.status.code),
                reason: "its response of \(bytes.readableBytes) bytes exceeded the \(configuration.maximumStoredResponse) bytes kept for replays")
        } else {
            var headers: [String: String] = [:]
            for field in replayable.headers where IdempotencyHTTP.replayedFields.contains(field.name) {
                headers[field.name.canonicalName] = field.value
            }
            stored = StoredResponse(status: Int(replayable.status.code), headers: headers, body: Array(buffer: bytes))
        }
        do {
            try await complete(key: key, stored, owner: owner, logger: context.logger)
        } catch {
            return IdempotencyProblem.storeUnavailable.response(detail: "The response could not be recorded; retry with the same key.")
        }
        return replayable
    }

    /// Stores `response` under `key`, kept for the retention from now (the
    /// request's end, however long it ran). If the store refuses it (too
    /// large for its records, say), stores a
    /// ``IdempotencyProblem/responseNotStored`` marker instead; if that fails
    /// too, releases the claim and throws.
    private func complete(key: String, _ response: StoredResponse, owner: String, logger: Logger) async throws {
        let now = configuration.now()
        let expiresAt = now.addingTimeInterval(configuration.retention.seconds)
        do {
            try await store.complete(key: key, response: response, now: now, expiresAt: expiresAt)
            return
        } catch {
            logger.error("cannot store idempotent response", metadata: ["key": "\(key)", "error": "\(error)"])
        }
        let marker = IdempotencyProblem.notStored(status: response.status, reason: "the key store could not keep its response")
        if response != marker {
            do {
                try await store.complete(key: key, response: marker, now: now, expiresAt: expiresAt)
                return
            } catch {
                logger.error("cannot store idempotent response marker", metadata: ["key": "\(key)", "error": "\(error)"])
            }
        }
        // The effect happened but cannot be recorded: say so instead of
        // pretending, so the client retries (and the log shows why).
        try? await store.abandon(key: key, owner: owner)
        throw StoreUnavailable()
    }

    private struct StoreUnavailable: Error {}

    /// Deletes expired keys if the sweep is due; a failure is logged, never
    /// fails the request.
    private func sweepIfDue(now: Date, logger: Logger) async {
        guard let interval = configuration.expiryInterval, sweeper.claim(now: now, interval: interval) else { return }
        do {
            let removed = try await store.expire(now: now)
            if removed > 0 { logger.debug("expired idempotency keys", metadata: ["count": "\(removed)"]) }
        } catch {
            logger.warning("cannot expire idempotency keys", metadata: ["error": "\(error)"])
        }
    }
}
