import Foundation

/// What an Idempotency-Key server says about the key in one response.
///
/// Servers say it in many ways — a 409 with `Retry-After`, a problem
/// document, Stripe's error codes, a middleware's own `detail` sentence, an
/// `Idempotent-Replayed` header — and ``HTTPResponseClassifier``s translate
/// each into one of these. ``HTTPOutboxHandler`` then picks the outcome from
/// the status and the signal (see its table).
public enum IdempotencyKeySignal: Sendable, Hashable {
    /// A request with this key is still being processed (the first attempt,
    /// whose answer was lost, say): poll, do not count a failure.
    case inProgress
    /// This response is the stored answer of an earlier request with this
    /// key, replayed: a 2xx means the write was applied by that request.
    case replayed
    /// The key was used before for a different request.
    case keyReused
    /// The key was processed, but the server did not keep its response.
    case responseNotStored
    /// Not about the key: a genuine conflict with the server's data. An app
    /// classifier says this to keep a 409 a conflict even after an attempt
    /// of unknown outcome.
    case conflict
}

/// One HTTP response as a classifier sees it.
public struct HTTPServerAnswer: Sendable {
    public var status: Int
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: [UInt8]
    /// Whether an earlier attempt of this entry has an unknown outcome (sent,
    /// answer lost; or cut short by a crash): that request may still be
    /// running on the server, so a 409 to this one most likely means "in
    /// progress".
    public var followsUnknownOutcome: Bool
    /// This attempt's number, from 1.
    public var attempt: Int
    /// The string members of a JSON error body, flattened (`"detail"`,
    /// `"error.code"`), read for 4xx answers only: a success body is the
    /// app's data, never a signal.
    private let fields: [String: String]

    public init(status: Int, headers: [String: String], body: [UInt8], followsUnknownOutcome: Bool, attempt: Int) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
        self.followsUnknownOutcome = followsUnknownOutcome
        self.attempt = attempt
        self.fields = (400..<500).contains(status) ? Self.stringFields(of: body) : [:]
    }

    /// A string member of a 4xx answer's JSON body, by name or dotted path
    /// (`"title"`, `"error.code"`); `nil` for other answers.
    public func field(_ path: String) -> String? { fields[path] }

    /// The answer's error text, lower-cased: every string member of its JSON
    /// body (type, title, code, detail, message, error…), or the body itself
    /// if it is short text. Empty for answers other than 4xx.
    public var errorText: String {
        guard (400..<500).contains(status) else { return "" }
        if fields.isEmpty { return body.count <= 1024 ? String(decoding: body, as: UTF8.self).lowercased() : "" }
        return fields.keys.sorted().map { fields[$0]! }.joined(separator: " ").lowercased()
    }

    private static func stringFields(of body: [UInt8]) -> [String: String] {
        guard !body.isEmpty, body.count <= 64 << 10,
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        else { return [:] }
        var fields: [String: String] = [:]
        for (name, value) in object {
            if let text = value as? String {
                fields[name] = text
            } else if let nested = value as? [String: Any] {
                for (inner, value) in nested { if let text = value as? String { fields["\(name).\(inner)"] = text } }
            }
        }
        return fields
    }
}

/// Reads what a server says about the idempotency key in a response: one
/// rule of ``HTTPOutboxHandler/Configuration/responseClassifiers``.
///
/// The handler asks each classifier in turn and takes the first signal.
/// The built-in ones (``standard``) cover our middleware, the IETF
/// Idempotency-Key draft, Stripe and the third-party middlewares the
/// interop tests run against; an app whose server speaks otherwise puts its
/// own rule first:
///
/// ```swift
/// var configuration = HTTPOutboxHandler.Configuration(baseURL: api)
/// configuration.responseClassifiers.insert(
///     HTTPResponseClassifier("our API") { answer in
///         answer.status == 409 && answer.field("code") == "version_mismatch" ? .conflict : nil
///     },
///     at: 0)
/// ```
public struct HTTPResponseClassifier: Sendable {
    /// For logs and docs.
    public var name: String
    /// The signal in `answer`, or `nil` if this rule sees none.
    public var classify: @Sendable (HTTPServerAnswer) -> IdempotencyKeySignal?

    public init(_ name: String, _ classify: @escaping @Sendable (HTTPServerAnswer) -> IdempotencyKeySignal?) {
        self.name = name
        self.classify = classify
    }

    /// The built-in rules, in the order they are asked.
    public static let standard: [HTTPResponseClassifier] = [
        replayHeaders, retryAfterOnConflict, problemDocuments, stripeErrors, middlewareSentences,
    ]

    /// `Idempotent-Replayed: true` (Stripe, the IETF draft's examples, our
    /// middleware, fastapi-idempotency, drf-idempotency,
    /// asgi-idempotency-header) and the other spellings servers use:
    /// `Idempotency-Replayed`, `X-Idempotent-Replayed`,
    /// `X-Idempotency-Replayed`, `Idempotency-Replay`, `X-Idempotency-Replay`.
    /// Values `true`, `1` or `yes`; `false` (drf-idempotency sends it on
    /// fresh answers) says nothing. Also `Idempotency-Status: replayed` and
    /// `X-Idempotency-Status: replayed`.
    public static let replayHeaders = HTTPResponseClassifier("replay headers") { answer in
        for name in replayHeaderNames {
            guard let value = answer.headers[name] else { continue }
            if ["true", "1", "yes"].contains(value.trimmingCharacters(in: .whitespaces).lowercased()) { return .replayed }
        }
        for name in ["idempotency-status", "x-idempotency-status"] {
            if answer.headers[name]?.trimmingCharacters(in: .whitespaces).lowercased() == "replayed" { return .replayed }
        }
        return nil
    }

    static let replayHeaderNames = [
        "idempotent-replayed", "idempotency-replayed", "x-idempotent-replayed", "x-idempotency-replayed",
        "idempotency-replay", "x-idempotency-replay",
    ]

    /// A 409 with `Retry-After` is "try again later", not a disagreement:
    /// our middleware answers so while the first request with a key runs.
    public static let retryAfterOnConflict = HTTPResponseClassifier("409 with Retry-After") { answer in
        answer.status == 409 && answer.headers["retry-after"] != nil ? .inProgress : nil
    }

    /// RFC 9457 problem documents about the key: the IETF draft's ("A request
    /// is outstanding for this Idempotency-Key", "Idempotency-Key is already
    /// used") and our middleware's (`…/in-progress`, `…/key-reused`,
    /// `…/response-not-stored`), read from `type`, `title` and `code`.
    public static let problemDocuments = HTTPResponseClassifier("problem documents") { answer in
        let words = ["type", "title", "code"].compactMap { answer.field($0) }.joined(separator: " ").lowercased()
        return signal(in: words)
    }

    /// Stripe-style errors, `{"error": {"type": "idempotency_error", "code": …,
    /// "message": …}}`: `idempotency_key_in_use` ("another in-progress
    /// request using this Idempotent Key") is in progress; an idempotency
    /// error about other parameters is a reused key.
    public static let stripeErrors = HTTPResponseClassifier("Stripe errors") { answer in
        let code = answer.field("error.code")?.lowercased() ?? ""
        let type = answer.field("error.type")?.lowercased() ?? ""
        let message = answer.field("error.message")?.lowercased() ?? ""
        if code == "idempotency_key_in_use" || (type == "idempotency_error" && message.contains("in-progress")) {
            return .inProgress
        }
        if type == "idempotency_error" || code.contains("idempotency") { return signal(in: "\(code) \(message)") ?? .keyReused }
        return nil
    }

    /// The sentences third-party middlewares put in `detail` or `message`:
    /// "Request already pending for idempotency key" (asgi-idempotency-header),
    /// "…is still being processed" (fastapi-idempotency), "…is already being
    /// processed" (drf-idempotency), "…was already used for a different
    /// request", "…was previously used with a different request".
    public static let middlewareSentences = HTTPResponseClassifier("middleware sentences") { answer in
        let words = ["detail", "message", "error", "error.message"].compactMap { answer.field($0) }
            .joined(separator: " ").lowercased()
        guard words.contains("idempoten") || words.contains("request") else { return nil }
        return signal(in: words)
    }

    /// The signal named in `words` (lower case), if any.
    static func signal(in words: String) -> IdempotencyKeySignal? {
        guard !words.isEmpty else { return nil }
        if inProgressMarkers.contains(where: words.contains) { return .inProgress }
        if responseNotStoredMarkers.contains(where: words.contains) { return .responseNotStored }
        if keyReusedMarkers.contains(where: words.contains) { return .keyReused }
        return nil
    }

    static let inProgressMarkers = [
        "in-progress", "in progress", "in_progress", "key_in_use", "outstanding", "already pending",
        "being processed", "still processing", "currently processing", "concurrent request",
    ]
    static let keyReusedMarkers = [
        "key-reused", "key_reused", "key reused", "key is already used", "already used", "previously used",
        "idempotency_key_reuse", "key_mismatch", "same parameters",
    ]
    static let responseNotStoredMarkers = [
        "response-not-stored", "response not stored", "already processed", "already-processed",
    ]
}
