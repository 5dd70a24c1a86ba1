/// Where the HTTP handler gets credentials: at send time, never from the
/// stored entry (auth headers are never written to disk).
public protocol OutboxTokenProvider: Sendable {
    /// The current access token, or `nil` to send without one.
    func token() async throws -> String?
    /// The server answered 401: obtain a fresh token (a refresh-token
    /// exchange, say) and return it.
    func refreshedToken() async throws -> String?
}

/// A fixed token, for tests and service-to-service calls.
public struct StaticTokenProvider: OutboxTokenProvider {
    public let value: String?
    public init(_ value: String?) { self.value = value }
    public func token() async throws -> String? { value }
    public func refreshedToken() async throws -> String? { value }
}
