import Foundation
import Outbox

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Delivers outbox entries over HTTP with `URLSession`.
///
/// Each attempt sends the entry's method, `baseURL` + endpoint (its `local:`
/// ids already resolved), payload and stored headers, plus
/// `Idempotency-Key: <the entry's key>` — the same on every attempt — and an
/// `Authorization` header from the token provider. Responses map to outcomes:
///
/// | Response | Outcome |
/// |---|---|
/// | 2xx | delivered; the server id from ``Configuration/serverID`` (default: JSON `id`) |
/// | 401 | refresh the token and resend once, within the same attempt; a second 401 is transient |
/// | 408, 425, 429, 5xx, timeouts, network errors | transient; `Retry-After` honoured |
/// | 409 with `Retry-After` | transient: the first request with this key is still running |
/// | 409 | conflict (the handler's ``Configuration/conflictPolicy``) |
/// | other 4xx, and anything else | permanent, with the status and the start of the body |
public struct HTTPOutboxHandler: OutboxHandler {
    public struct Configuration: Sendable {
        /// The server the endpoints are relative to.
        public var baseURL: URL
        /// Credentials at send time; `nil` sends no `Authorization` header.
        public var tokenProvider: (any OutboxTokenProvider)?
        /// The authorization scheme put before the token.
        public var authorizationScheme = "Bearer"
        /// Extracts the server id from a 2xx response. Default: the `id`
        /// member of a JSON object body (string or number).
        public var serverID: @Sendable (_ status: Int, _ headers: [String: String], _ body: Data) -> String? = Self.jsonID
        /// How long one request may take before it is a transient failure.
        /// On Linux it is rounded up to whole seconds (at least one).
        public var requestTimeout: Duration = .seconds(30)
        public var conflictPolicy: OutboxConflictPolicy = .manual
        /// At most this much of an error body goes into the entry's last error.
        public var maximumErrorBodyBytes = 512
        public var session: URLSession = .shared

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
        var response = await send(delivery, token: token)
        if case .response(let status, _, _) = response, status == 401, let provider = configuration.tokenProvider {
            // Refresh and resend once, without burning an attempt.
            do { token = try await provider.refreshedToken() } catch {
                return .transient(reason: "401, and the token refresh failed: \(error)", httpStatus: 401, retryAfter: nil)
            }
            response = await send(delivery, token: token)
        }
        return outcome(for: response)
    }

    // MARK: Sending

    enum Response {
        case response(status: Int, headers: [String: String], body: Data)
        case failure(String)
    }

    func request(for delivery: OutboxDelivery, token: String?) throws -> URLRequest {
        let base = configuration.baseURL.absoluteString.hasSuffix("/")
            ? String(configuration.baseURL.absoluteString.dropLast()) : configuration.baseURL.absoluteString
        guard let url = URL(string: base + delivery.endpoint) else {
            throw URLError(.badURL)
        }
        var request = URLRequest(url: url)
        request.httpMethod = delivery.method
        for (name, value) in delivery.headers { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue(delivery.idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
        if let token { request.setValue("\(configuration.authorizationScheme) \(token)", forHTTPHeaderField: "Authorization") }
        if !delivery.payload.isEmpty { request.httpBody = Data(delivery.payload) }
        let timeout = configuration.requestTimeout
        var seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        #if canImport(FoundationNetworking)
        // libcurl, under Linux's URLSession, rounds fractions of a second
        // down: 0.5 s would time out at once.
        seconds = max(1, seconds.rounded(.up))
        #endif
        request.timeoutInterval = seconds
        return request
    }

    private func send(_ delivery: OutboxDelivery, token: String?) async -> Response {
        let request: URLRequest
        do { request = try self.request(for: delivery, token: token) } catch {
            return .failure("bad URL: \(configuration.baseURL)\(delivery.endpoint)")
        }
        do {
            let (data, response) = try await configuration.session.data(for: request)
            guard let http = response as? HTTPURLResponse else { return .failure("not an HTTP response") }
            var headers: [String: String] = [:]
            for (name, value) in http.allHeaderFields {
                if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
            }
            return .response(status: http.statusCode, headers: headers, body: data)
        } catch {
            return .failure(Self.describe(error))
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let urlError = error as? URLError {
            switch urlError.code {
            case .timedOut: return "request timed out"
            case .networkConnectionLost: return "connection lost"
            case .cannotConnectToHost: return "cannot connect to host"
            case .notConnectedToInternet: return "offline"
            default: return "network error \(urlError.code.rawValue): \(urlError.localizedDescription)"
            }
        }
        return "\(error)"
    }

    // MARK: Mapping

    func outcome(for response: Response) -> OutboxOutcome {
        switch response {
        case .failure(let reason):
            return .transient(reason: reason, httpStatus: nil, retryAfter: nil)
        case .response(let status, let headers, let body):
            switch status {
            case 200..<300:
                return .delivered(serverID: configuration.serverID(status, headers, body))
            case 408, 425, 429, 500..<600:
                return .transient(
                    reason: "HTTP \(status)\(excerpt(body))", httpStatus: status,
                    retryAfter: RetryAfter.parse(headers["retry-after"]))
            case 401:
                return .transient(reason: "HTTP 401 unauthorized, also after a token refresh", httpStatus: 401, retryAfter: nil)
            case 409 where headers["retry-after"] != nil:
                // "Try again later", not a disagreement: what an
                // Idempotency-Key server answers while the first request
                // with this key is still running (our middleware does).
                // Retrying gets the stored response once it has finished.
                return .transient(
                    reason: "HTTP 409, the request with this key is still in progress\(excerpt(body))",
                    httpStatus: 409, retryAfter: RetryAfter.parse(headers["retry-after"]))
            case 409:
                return .conflict(reason: "HTTP 409\(excerpt(body))", httpStatus: 409)
            default:
                return .permanent(reason: "HTTP \(status)\(excerpt(body))", httpStatus: status)
            }
        }
    }

    private func excerpt(_ body: Data) -> String {
        guard !body.isEmpty else { return "" }
        let slice = body.prefix(configuration.maximumErrorBodyBytes)
        let text = String(decoding: slice, as: UTF8.self)
        return ": " + text + (body.count > slice.count ? "…" : "")
    }
}
