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
/// | body too large / unreadable | 413 / 400, and the connection is closed |
/// | the key store cannot record the claim | 503 with `Retry-After`; the handler is **not** run |
/// | the store is full of live keys | 503 with `Retry-After` (``IdempotencyProblem/storeFull``) |
/// | repeat of a request whose response could not be recorded | 503 with `Retry-After` (``IdempotencyProblem/outcomeUnknown``) |
/// | repeat of a request whose response was too large to store | 410 Gone (``IdempotencyProblem/responseNotStored``) |
///
/// **A handler runs at most once per key.** Once it has run, its key is
/// completed (the response stored), or marked outcome-unknown if the store
/// could not keep the response — never released for a second run. A 4xx
/// the handler throws (an `HTTPResponseError` such as `HTTPError`) is an
/// answer like a returned one: stored and replayed. A handler that throws
/// anything else or answers 5xx promises it applied nothing: its claim is
/// released and a retry runs again (5xx answers are never stored).
///
/// Keys are kept for ``Configuration/retention``, then deleted by a sweep
/// the requests trigger (at most once per ``Configuration/expiryInterval``).
/// Error responses are RFC 9457 problem documents (``IdempotencyProblem``).
/// A request is never run twice at once: a key stays in progress for as long
/// as this process runs its request (see ``Configuration/staleAfter``).
public struct IdempotencyMiddleware<Context: RequestContext>: RouterMiddleware {
    public let store: any IdempotencyKeyStore
    public let configuration: Configuration
    private let sweeper = ExpirySweeper()
    let settlements = PendingSettlements()

    public init(store: any IdempotencyKeyStore, configuration: Configuration = Configuration()) {
        self.store = store
        self.configuration = configuration
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        await sweepIfDue(now: configuration.now(), logger: context.logger)
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
        switch await IdempotencyHTTP.readBody(of: &request, limit: configuration.maximumBodySize) {
        case .success(let bytes): body = bytes
        case .failure(let refusal): return refusal.response
        }
        let fingerprint = IdempotencyHTTP.fingerprint(request, body: body)
        // The claim's time is taken now, after the body: a body that took
        // longer than `staleAfter` to arrive must not be claimed already
        // stale, or another node would mark the running request abandoned.
        let now = configuration.now()
        if let answer = await settlePending(key: key, now: now, logger: context.logger) { return answer }
        if let answer = await claim(key: key, fingerprint: fingerprint, now: now, logger: context.logger) { return answer }
        return try await run(request, context: context, key: key, next: next)
    }

    /// Claims the key; returns the answer when the request must not run.
    private func claim(key: String, fingerprint: [UInt8], now: Date, logger: Logger) async -> Response? {
        let owner = configuration.serverInstance
        let claim = IdempotencyClaim(
            owner: owner, staleAfter: configuration.staleAfter, expiresAt: now.addingTimeInterval(configuration.retention.seconds))
        let result: IdempotencyBeginResult
        do {
            result = try await store.begin(key: key, fingerprint: fingerprint, now: now, claim: claim)
        } catch {
            logger.error("cannot record an idempotency claim; refusing the request", metadata: ["key": "\(key)", "error": "\(error)"])
            return IdempotencyProblem.storeUnavailable.response(
                detail: "The idempotency key store cannot record this request right now, so it was not run. Retry with the same key.",
                retryAfter: configuration.unavailableRetryAfter)
        }
        switch result {
        case .proceed:
            return nil
        case .completed(let stored):
            return IdempotencyHTTP.replay(stored)
        case .inProgress:
            return IdempotencyProblem.inProgress(retryAfter: configuration.inProgressRetryAfter)
        case .fingerprintMismatch:
            return IdempotencyProblem.keyReused.response(detail: "This Idempotency-Key was already used for a different request.")
        case .outcomeUnknown(let unsettled):
            return IdempotencyProblem.outcomeUnknown(unsettled, retryAfter: configuration.outcomeUnknownRetryAfter)
        case .atCapacity(let retryAfter):
            return IdempotencyProblem.storeFull.response(
                detail: "The idempotency key store is full of keys that have not expired yet, so this request was not run. "
                    + "Retry with the same key after the Retry-After delay.",
                retryAfter: retryAfter)
        }
    }

    /// Runs the claimed request and settles its key: completed, released
    /// (the handler threw or answered 5xx) or outcome-unknown.
    private func run(
        _ request: Request, context: Context, key: String, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let response: Response
        do {
            response = try await Self.answer(of: request, context: context, next: next)
        } catch {
            await release(key: key, logger: context.logger)
            throw error
        }
        // 5xx: the handler applied nothing; let a retry run again. Never stored.
        guard response.status.code < 500 else {
            await release(key: key, logger: context.logger)
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
            await settle(key: key, stored, logger: context.logger)
            throw error
        }
        await settle(key: key, storable(replayable, body: bytes), logger: context.logger)
        return replayable
    }

    /// The handler's answer. A thrown 4xx (`HTTPError(.notFound)`, a
    /// validation error) is Hummingbird's idiom for an answer, and on the
    /// wire it is the same as a returned one: it is stored and replayed like
    /// one, so the handler is not run again and a repeat cannot differ.
    private static func answer(
        of request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError where (400..<500).contains(error.status.code) {
            return try error.response(from: request, context: context)
        }
    }

    /// What the key keeps of a response: the response, or a
    /// ``IdempotencyProblem/responseNotStored`` marker if it is too large.
    private func storable(_ response: Response, body bytes: ByteBuffer) -> StoredResponse {
        guard bytes.readableBytes <= configuration.maximumStoredResponse else {
            // Never replay a cut body: store a clear error for repeats.
            return IdempotencyProblem.notStored(
                status: Int(response.status.code),
                reason: "its response of \(bytes.readableBytes) bytes exceeded the \(configuration.maximumStoredResponse) bytes kept for replays")
        }
        var headers: [String: String] = [:]
        for field in response.headers where IdempotencyHTTP.replayedFields.contains(field.name) {
            // A key store keeps a header in at most 65,535 bytes: a longer
            // one would be replayed cut, so the response is not kept at all.
            guard field.value.utf8.count <= Int(UInt16.max) else {
                return IdempotencyProblem.notStored(
                    status: Int(response.status.code),
                    reason: "its \(field.name) header of \(field.value.utf8.count) bytes is longer than a stored response keeps")
            }
            headers[field.name.canonicalName] = field.value
        }
        return StoredResponse(status: Int(response.status.code), headers: headers, body: Array(buffer: bytes))
    }

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
