import Outbox

/// How ``HTTPOutboxHandler`` resends a write after a conflict when its
/// ``HTTPOutboxHandler/Configuration/conflictPolicy`` is
/// ``OutboxConflictPolicy/clientWins``
/// (``HTTPOutboxHandler/Configuration/clientWinsResend``): the same
/// endpoint and body, with the method and headers that make the server
/// take the client's version — a `PUT` with `If-Match: *`, say.
///
/// The resend carries its own idempotency key, the entry's key followed by
/// ``keySuffix``: under the entry's key, an Idempotency-Key server would
/// only replay its stored 409. Derived, not random, so a resend repeated
/// after a crash is still recognised as the same request.
public struct ClientWinsResend: Sendable, Hashable {
    /// The method of the resend; `nil` keeps the entry's.
    public var method: String?
    /// Headers added to the entry's stored ones (replacing one of the same
    /// name), such as `If-Match: *` or the server's own override flag.
    public var headers: [String: String]
    /// Appended to the entry's idempotency key for the resend.
    public var keySuffix: String

    public init(method: String? = nil, headers: [String: String] = [:], keySuffix: String = "-client-wins") {
        self.method = method
        self.headers = headers
        self.keySuffix = keySuffix
    }

    /// `delivery` as the resend sends it.
    func apply(to delivery: OutboxDelivery) -> OutboxDelivery {
        var resend = delivery
        if let method { resend.entry.method = method }
        let replaced = Set(headers.keys.map { $0.lowercased() })
        resend.entry.headers = resend.entry.headers.filter { !replaced.contains($0.key.lowercased()) }.merging(headers) { _, new in new }
        resend.entry.idempotencyKey += keySuffix
        return resend
    }
}

extension HTTPOutboxHandler {
    /// For ``OutboxConflictPolicy/clientWins``: sends the write again as
    /// ``Configuration/clientWinsResend`` says, under its derived key. With
    /// no resend configured the conflict stands (the entry waits in
    /// `conflict`). Its answer maps like any other; a second conflict
    /// leaves the entry in `conflict`.
    public func resendAfterConflict(_ delivery: OutboxDelivery) async throws -> OutboxOutcome {
        guard let resend = configuration.clientWinsResend else {
            return .conflict(
                reason: "clientWins, but no resend is configured (HTTPOutboxHandler.Configuration.clientWinsResend)",
                httpStatus: nil)
        }
        return try await deliver(resend.apply(to: delivery))
    }
}
