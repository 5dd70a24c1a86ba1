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
    case bodyTooLarge = "body-too-large"
    /// 409 with `Retry-After`: a request with this key is still being
    /// processed; retry later with the same key. Transient.
    case inProgress = "in-progress"
    /// 422: the key was already used for a different request.
    case keyReused = "key-reused"
    /// 410, stored as the key's response: the request was processed, but its
    /// response was too large to keep for replays, so a repeat cannot be
    /// answered with it. Permanent: retrying cannot bring it back.
    case responseNotStored = "response-not-stored"
    /// 503: the request ran but its response could not be recorded; retry
    /// with the same key.
    case storeUnavailable = "store-unavailable"

    /// The problem's `type` URI.
    public var type: String { "https://github.com/swift-outbox/problems/\(rawValue)" }

    /// The HTTP status it is sent with.
    public var status: Int {
        switch self {
        case .missingKey, .invalidKey: 400
        case .bodyTooLarge: 413
        case .inProgress: 409
        case .keyReused: 422
        case .responseNotStored: 410
        case .storeUnavailable: 503
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
        case .storeUnavailable: "Idempotency store unavailable"
        }
    }

    /// The problem document's bytes.
    func document(detail: String) -> [UInt8] {
        let document: [String: Any] = ["type": type, "title": title, "status": status, "detail": detail]
        return Array((try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])) ?? Data())
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
        let seconds = Int(retryAfter.seconds.rounded(.up))
        var fields = HTTPFields()
        fields[.retryAfter] = String(max(0, seconds))
        return IdempotencyProblem.inProgress.response(
            detail: "A request with this Idempotency-Key is still being processed; retry after \(seconds) second\(seconds == 1 ? "" : "s") with the same key.",
            fields: fields)
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
