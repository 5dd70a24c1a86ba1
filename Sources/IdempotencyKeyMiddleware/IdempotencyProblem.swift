import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The error responses of ``IdempotencyMiddleware``: RFC 9457 problem
/// documents (`Content-Type: application/problem+json`) with members
/// `type`, `title`, `status` and `detail`, keys sorted.
public enum IdempotencyProblem: String, Sendable, Hashable, CaseIterable {
    /// 400: the route requires an `Idempotency-Key` and the request has none.
    case missingKey = "missing-key"
    /// 400: the key is not 1 to 255 visible ASCII characters.
    case invalidKey = "invalid-key"
    /// 413: the request body is larger than the middleware fingerprints.
    /// Sent with `Connection: close`: the rest of the upload is not read.
    case bodyTooLarge = "body-too-large"
    /// 400: the request body could not be read (a malformed chunked
    /// encoding, say). Sent with `Connection: close`: the connection's
    /// framing is lost.
    case malformedBody = "malformed-body"
    /// 409 with `Retry-After`: a request with this key is still being
    /// processed; retry later with the same key. Transient.
    case inProgress = "in-progress"
    /// 422: the key was already used for a different request.
    case keyReused = "key-reused"
    /// 410, stored as the key's response: the request was processed, but its
    /// response was too large to keep for replays, so a repeat cannot be
    /// answered with it. Permanent: retrying cannot bring it back.
    case responseNotStored = "response-not-stored"
    /// 503 with `Retry-After`: the key store could not record the claim, so
    /// the request was **not** run. Transient: retry with the same key.
    case storeUnavailable = "store-unavailable"
    /// 503 with `Retry-After`: a request with this key ran (or may have: its
    /// server stopped while it ran), but its response was not recorded, so
    /// the server cannot tell whether the write was applied and will not
    /// run it again. Repeats get this answer until an operator resolves the
    /// key or it expires.
    case outcomeUnknown = "outcome-unknown"
    /// 503 with `Retry-After`: the key store holds as many keys as it may
    /// and none has expired yet; nothing was run. Transient: retry with the
    /// same key after `Retry-After`.
    case storeFull = "store-full"

    /// The problem's `type` URI.
    public var type: String { "https://github.com/swift-outbox/problems/\(rawValue)" }

    /// The HTTP status it is sent with.
    public var status: Int {
        switch self {
        case .missingKey, .invalidKey, .malformedBody: 400
        case .bodyTooLarge: 413
        case .inProgress: 409
        case .keyReused: 422
        case .responseNotStored: 410
        case .storeUnavailable, .outcomeUnknown, .storeFull: 503
        }
    }

    /// The problem's `title`.
    public var title: String {
        switch self {
        case .missingKey: "Idempotency-Key missing"
        case .invalidKey: "Idempotency-Key malformed"
        case .bodyTooLarge: "Request body too large"
        case .inProgress: "Request in progress"
        case .keyReused: "Idempotency-Key reused"
        case .responseNotStored: "Response not stored"
        case .malformedBody: "Request body malformed"
        case .storeUnavailable: "Idempotency store unavailable"
        case .outcomeUnknown: "Outcome unknown"
        case .storeFull: "Idempotency store full"
        }
    }

    /// The problem document's bytes.
    func document(detail: String) -> [UInt8] {
        let document: [String: Any] = ["type": type, "title": title, "status": status, "detail": detail]
        return Array((try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }

    /// The problem as a response; `fields` are added to its headers.
    func response(detail: String, fields: HTTPFields = [:]) -> Response {
        var headers = fields
        headers[.contentType] = "application/problem+json"
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: document(detail: detail))))
    }

    /// The 409 for a key still in progress, with `Retry-After` in whole
    /// seconds (rounded up).
    static func inProgress(retryAfter: Duration) -> Response {
        let seconds = retryAfter.wholeSeconds()
        return IdempotencyProblem.inProgress.response(
            detail: "A request with this Idempotency-Key is still being processed; retry after \(seconds) second\(seconds == 1 ? "" : "s") with the same key.",
            fields: [.retryAfter: String(seconds)])
    }

    /// A 503 problem with `Retry-After` in whole seconds (at least 1).
    func response(detail: String, retryAfter: Duration) -> Response {
        response(detail: detail, fields: [.retryAfter: String(retryAfter.wholeSeconds(atLeast: 1))])
    }

    /// A problem that ends the connection once sent (`Connection: close`),
    /// for requests whose body the server will not read to its end.
    func closingResponse(detail: String) -> Response {
        response(detail: detail, fields: [.connection: "close"])
    }

    /// The answer for a key whose outcome is unknown.
    static func outcomeUnknown(_ key: IdempotencyUnsettledKey, retryAfter: Duration) -> Response {
        let why: String
        switch key.reason {
        case .responseNotRecorded: why = "its handler ran but the response could not be recorded"
        case .serverStopped: why = "the server stopped while it ran"
        case .claimAbandoned: why = "the server instance running it stopped answering"
        }
        return IdempotencyProblem.outcomeUnknown.response(
            detail: "A request with this Idempotency-Key was started, but \(why), so whether it was applied is unknown. "
                + "It will not be run again under this key; the server's operator can resolve it. Do not resend it with a new key "
                + "unless you know it was not applied.",
            retryAfter: retryAfter)
    }

    /// What is stored instead of a response that cannot be kept; `reason`
    /// completes "…processed (HTTP 201), but …".
    static func notStored(status: Int, reason: String) -> StoredResponse {
        StoredResponse(
            status: IdempotencyProblem.responseNotStored.status, headers: ["content-type": "application/problem+json"],
            body: IdempotencyProblem.responseNotStored.document(
                detail: "The request with this Idempotency-Key was processed (HTTP \(status)), but \(reason), so it cannot be "
                    + "replayed. The write was applied: do not send it again with a new key."))
    }
}
