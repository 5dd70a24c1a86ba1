import Foundation
import Outbox

/// Delivers outbox entries over HTTP.
///
/// Each attempt sends the entry's method, `baseURL` + endpoint (its `local:`
/// ids already resolved), payload and stored headers (sorted by name), then
/// `Idempotency-Key: <the entry's key>` (or where
/// ``Configuration/idempotencyKeyPlacement`` puts the key: another header,
/// a member of the JSON body) and an `Authorization` header from
/// the token provider — the same bytes on every attempt (only a refreshed
/// token changes them). It goes through an ``HTTPTransport`` that never
/// retries and never follows redirects. Responses map to outcomes:
///
/// An app's ``Configuration/outcomeRules`` are asked first (a whole
/// answer only); what the server says about the key is read by the
/// ``Configuration/responseClassifiers`` (an ``IdempotencyKeySignal``);
/// the outcome follows from the status and that signal:
///
/// | Response | Outcome |
/// |---|---|
/// | 2xx, and 303 See Other, replayed (`Idempotent-Replayed: true` and other spellings) | replayed: delivered, counted as a replay; the server id from the replayed body |
/// | 2xx, and 303 See Other | delivered; the server id from ``Configuration/serverID`` (default: JSON `id`) |
/// | 2xx whose JSON body ends with the connection (no `Content-Length`) and does not parse | interrupted: the answer was cut |
/// | other 3xx | permanent: writes are never redirected; the reason names the `Location` |
/// | 401 | refresh the token and resend once, within the same attempt; a second 401 is transient |
/// | 408, 425, 429, 5xx | transient; `Retry-After` honoured (the dispatcher clamps it) |
/// | 4xx saying "in progress" (409 with `Retry-After`, the draft's problem, Stripe's `idempotency_key_in_use`, the middlewares' sentences) | in progress: polled, not counted |
/// | 409 saying nothing about the key, to a resend after an attempt of unknown outcome | in progress: the first request is most likely still running |
/// | 409, or a classifier's ``IdempotencyKeySignal/conflict`` | conflict (the handler's ``Configuration/conflictPolicy``) |
/// | 4xx saying the key was reused or its response not stored; 410 on a resend | already processed: needs attention, never quarantined |
/// | other 4xx, and anything else | permanent, with the status and the start of the body |
/// | no connection, or it broke before the request was sent | not sent |
/// | the request was sent, no (whole) answer | interrupted |
public struct HTTPOutboxHandler: OutboxHandler {
    /// Response bodies are read up to this many bytes (server ids and error
    /// excerpts need far less).
    public static let maximumResponseBytes = 1 << 20

    public struct Configuration: Sendable {
        /// The server the endpoints are relative to. Requests never leave
        /// its scheme, host and port.
        public var baseURL: URL
        /// Credentials at send time; `nil` sends no `Authorization` header.
        public var tokenProvider: (any OutboxTokenProvider)?
        /// The authorization scheme put before the token.
        public var authorizationScheme = "Bearer"
        /// Extracts the server id from a 2xx (or 303) response. Default: the
        /// `id` member of a JSON object body (string or number).
        public var serverID: @Sendable (_ status: Int, _ headers: [String: String], _ body: Data) -> String? = Self.jsonID
        /// How long one request may take, connecting included, before it is
        /// a timeout (interrupted if the request was sent, not sent otherwise).
        public var requestTimeout: Duration = .seconds(30)
        /// What a conflict leads to. With ``OutboxConflictPolicy/clientWins``
        /// the write is sent again as ``clientWinsResend`` says.
        public var conflictPolicy: OutboxConflictPolicy = .manual
        /// For ``OutboxConflictPolicy/clientWins``: how the write is resent
        /// after a conflict; `nil` leaves the conflict for the app.
        public var clientWinsResend: ClientWinsResend?
        /// At most this much of an error body goes into the entry's last error.
        public var maximumErrorBodyBytes = 512
        /// What reads the server's signals about the key (in progress,
        /// replayed, reused…) from a response; the first signal wins. Put an
        /// app's own rules first. Default ``HTTPResponseClassifier/standard``.
        public var responseClassifiers: [HTTPResponseClassifier] = HTTPResponseClassifier.standard
        /// What sends the requests: async-http-client on Linux, URLSession on
        /// Apple platforms (``DefaultHTTPTransport``).
        public var transport: any HTTPTransport = DefaultHTTPTransport.shared
        /// Where the entry's idempotency key goes: the `Idempotency-Key`
        /// header by default, another header, or a member of a JSON body.
        public var idempotencyKeyPlacement: IdempotencyKeyPlacement = .standard
        /// The app's own readings of responses, before the table (410 on a
        /// resend counts as delivered, say); the first outcome wins.
        public var outcomeRules: [HTTPOutcomeRule] = []

        public init(baseURL: URL, tokenProvider: (any OutboxTokenProvider)? = nil) {
            self.baseURL = baseURL
            self.tokenProvider = tokenProvider
        }

        /// The default server-id extractor: JSON `{"id": …}`.
        public static let jsonID: @Sendable (Int, [String: String], Data) -> String? = { _, _, body in
            guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any], let id = object["id"] else {
                return nil
            }
            if let text = id as? String { return text }
            if let number = id as? NSNumber { return number.stringValue }
            return nil
        }
    }

    public let configuration: Configuration
    public var conflictPolicy: OutboxConflictPolicy { configuration.conflictPolicy }

    public init(configuration: Configuration) { self.configuration = configuration }

    public init(baseURL: URL, tokenProvider: (any OutboxTokenProvider)? = nil) {
        self.init(configuration: Configuration(baseURL: baseURL, tokenProvider: tokenProvider))
    }

    public func deliver(_ delivery: OutboxDelivery) async throws -> OutboxOutcome {
        var token: String?
        do { token = try await configuration.tokenProvider?.token() } catch {
            return .transient(reason: "no token: \(error)", httpStatus: nil, retryAfter: nil)
        }
        let request: HTTPTransportRequest
        do { request = try self.request(for: delivery, token: token) } catch let error as KeyPlacementError where error.isConfiguration {
            return .notSent(reason: "\(error)")
        } catch {
            return .permanent(reason: "\(error)", httpStatus: nil)
        }
        var result = await configuration.transport.send(request, timeout: configuration.requestTimeout)
        if case .response(401, _, _) = result, let provider = configuration.tokenProvider {
            // Refresh and resend once, without burning an attempt.
            do { token = try await provider.refreshedToken() } catch {
                return .transient(reason: "401, and the token refresh failed: \(error)", httpStatus: 401, retryAfter: nil)
            }
            result = await configuration.transport.send(
                try self.request(for: delivery, token: token), timeout: configuration.requestTimeout)
        }
        return outcome(for: result, delivery: delivery)
    }

    // MARK: The request

    /// The idempotency key is configured to go in a JSON member of the body
    /// (``IdempotencyKeyPlacement/jsonBodyMember(_:)``), but the body is kept
    /// in a payload file (larger than the store's `largePayloadThreshold`)
    /// and is streamed from it exactly as enqueued: the key cannot be put
    /// in it. Such a request is never sent; the entry is quarantined with
    /// this reason. Send large bodies with the key in a header, or raise
    /// the threshold above the bodies that carry their key.
    public struct KeyInStreamedBody: Error, Sendable, Hashable, CustomStringConvertible {
        /// The JSON member the key was to go in.
        public var member: String
        /// The body's length in bytes.
        public var bodyBytes: Int

        public var description: String {
            "the idempotency key goes in the JSON member \"\(member)\", but the body (\(bodyBytes) bytes) is kept in a "
                + "payload file and streamed as enqueued, so no key can be added to it: not sent (put the key in a header "
                + "for large bodies, or raise OutboxStoreConfiguration.largePayloadThreshold)"
        }
    }

    /// A request that would leave the configured server.
    struct ForeignURL: Error, CustomStringConvertible {
        var url: String
        var base: URL
        var description: String { "the endpoint makes \(url), which is not on \(base): not sent" }
    }

    /// The request an attempt of `delivery` sends: the same bytes for the
    /// same delivery and token, in any process (stored headers sorted by
    /// name, then the key's header — `Idempotency-Key` unless
    /// ``Configuration/idempotencyKeyPlacement`` says otherwise — then
    /// `Authorization`).
    ///
    /// - Throws: if `baseURL` + endpoint would leave the configured scheme,
    ///   host and port, or the key cannot be placed as configured (an
    ///   invalid header name, a body that is not a JSON object, a key in the
    ///   JSON body of a body kept in a payload file: ``KeyInStreamedBody``):
    ///   such a request is never sent.
    public func request(for delivery: OutboxDelivery, token: String?) throws -> HTTPTransportRequest {
        let base = configuration.baseURL.absoluteString.hasSuffix("/")
            ? String(configuration.baseURL.absoluteString.dropLast()) : configuration.baseURL.absoluteString
        let text = base + delivery.endpoint
        guard let url = URL(string: text), Self.sameOrigin(url, configuration.baseURL) else {
            throw ForeignURL(url: text, base: configuration.baseURL)
        }
        // Sorted: a dictionary's order changes from process to process, and
        // a resend after a restart must be the same bytes.
        let placement = configuration.idempotencyKeyPlacement
        let keyHeader = try placement.headerName()
        if case .jsonBodyMember(let member) = placement, let large = delivery.largePayload {
            throw KeyInStreamedBody(member: member, bodyBytes: large.count)
        }
        let body = try placement.body(delivery.payload, key: delivery.idempotencyKey)
        var headers = delivery.headers
            .filter { !Self.reservedHeaders.contains($0.key.lowercased()) && $0.key.lowercased() != keyHeader?.lowercased() }
            .sorted { ($0.key.lowercased(), $0.key) < ($1.key.lowercased(), $1.key) }
            .map { (name: $0.key, value: $0.value) }
        if let keyHeader { headers.append((name: keyHeader, value: delivery.idempotencyKey)) }
        if let token { headers.append((name: "Authorization", value: "\(configuration.authorizationScheme) \(token)")) }
        return HTTPTransportRequest(
            method: delivery.method, url: url, headers: headers, body: body, streamedBody: delivery.largePayload)
    }

    /// Set by the handler or by the HTTP framing, never from the entry.
    static let reservedHeaders: Set<String> = ["idempotency-key", "authorization", "host", "content-length", "transfer-encoding", "connection", "expect"]

    static func sameOrigin(_ url: URL, _ base: URL) -> Bool {
        url.scheme?.lowercased() == base.scheme?.lowercased() && url.host?.lowercased() == base.host?.lowercased()
            && url.port == base.port && url.user == nil && url.password == nil
    }

    // MARK: Mapping

    func outcome(for result: HTTPTransportResult, delivery: OutboxDelivery) -> OutboxOutcome {
        switch result {
        case .failure(let failure):
            switch failure.stage {
            case .notSent: return .notSent(reason: "\(failure)")
            case .sent: return .interrupted(reason: "\(failure)")
            }
        case .response(let status, let headers, let body):
            return outcome(status: status, headers: headers, body: body, delivery: delivery)
        }
    }

    private func outcome(status: Int, headers: [String: String], body: [UInt8], delivery: OutboxDelivery) -> OutboxOutcome {
        let retryAfter = RetryAfter.parse(headers["retry-after"])
        let answer = HTTPServerAnswer(
            status: status, headers: headers, body: body, followsUnknownOutcome: delivery.entry.outcomeUnknownSince != nil,
            attempt: delivery.attempt)
        let signal = signal(in: answer)
        if (200..<300).contains(status) || status == 303, let cut = Self.cutShort(headers: headers, body: body) {
            return .interrupted(reason: cut)
        }
        for rule in configuration.outcomeRules {
            if let outcome = rule.outcome(for: answer) { return outcome }
        }
        switch (status, signal) {
        case (200..<300, .replayed), (303, .replayed):
            return .replayed(serverID: configuration.serverID(status, headers, Data(body)))
        case (200..<300, _), (303, _):
            // 303 See Other after a write: the server applied it and points
            // at the result (RFC 9110 §15.4.4). Never followed.
            return .delivered(serverID: configuration.serverID(status, headers, Data(body)))
        case (300..<400, _):
            let location = headers["location"].map { " to \($0)" } ?? " (no Location)"
            return .permanent(
                reason: "HTTP \(status): the server redirects this write\(location); writes are never redirected "
                    + "(credentials stay on \(configuration.baseURL.host ?? "the configured host")): fix the base URL or the endpoint",
                httpStatus: status)
        case (408, _), (425, _), (429, _), (500..<600, _):
            return .transient(reason: "HTTP \(status)\(excerpt(body))", httpStatus: status, retryAfter: retryAfter)
        case (401, _):
            return .transient(reason: "HTTP 401 unauthorized, also after a token refresh", httpStatus: 401, retryAfter: nil)
        case (400..<500, .inProgress):
            return .inProgress(
                reason: "HTTP \(status), the request with this key is still in progress\(excerpt(body))", retryAfter: retryAfter)
        case (409, nil) where answer.followsUnknownOutcome:
            // Answering a resend of a request whose answer was lost: that
            // request is most likely still running (Stripe, the IETF draft
            // and the third-party middlewares send 409 without Retry-After).
            return .inProgress(
                reason: "HTTP 409 to a resend after an attempt of unknown outcome: read as still in progress\(excerpt(body))",
                retryAfter: retryAfter)
        case (400..<500, .keyReused):
            return .alreadyProcessed(
                reason: "HTTP \(status): the server has processed this key for a different request\(excerpt(body))",
                httpStatus: status)
        // A bare 410 means "processed, answer gone" only to a resend: to a
        // first attempt it is the resource's own answer (permanent, below).
        case (400..<500, .responseNotStored),
            (410, _) where delivery.attempt > 1:
            return .alreadyProcessed(
                reason: "HTTP \(status): the server has processed this key but no longer has its answer\(excerpt(body))",
                httpStatus: status)
        case (409, _):
            return .conflict(reason: "HTTP 409\(excerpt(body))", httpStatus: 409)
        default:
            return .permanent(reason: "HTTP \(status)\(excerpt(body))", httpStatus: status)
        }
    }

    /// Why a success answer must have been cut short, if it must: its body
    /// is delimited by the connection's close (no `Content-Length`, not
    /// chunked — HTTP/1.0 style, as Django's WSGI server answers), so a
    /// connection lost mid-body looks like a whole answer to HTTP; a JSON
    /// body that does not parse is the only sign. Read as interrupted, the
    /// entry is resent with its key and the server's replay brings the whole
    /// answer (and the server id) back.
    static func cutShort(headers: [String: String], body: [UInt8]) -> String? {
        guard headers["content-length"] == nil, headers["transfer-encoding"] == nil,
            let type = headers["content-type"]?.lowercased(), type.contains("json"), !body.isEmpty,
            (try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])) == nil
        else { return nil }
        return "the answer was cut: its body ends with the connection (no Content-Length) and its JSON is not whole "
            + "(\(body.count) bytes)"
    }

    /// The first signal a classifier reads in `answer`.
    private func signal(in answer: HTTPServerAnswer) -> IdempotencyKeySignal? {
        for classifier in configuration.responseClassifiers {
            if let signal = classifier.classify(answer) { return signal }
        }
        return nil
    }

    private func excerpt(_ body: [UInt8]) -> String {
        guard !body.isEmpty else { return "" }
        let slice = body.prefix(configuration.maximumErrorBodyBytes)
        let text = String(decoding: slice, as: UTF8.self)
        return ": " + text + (body.count > slice.count ? "…" : "")
    }
}
