import Outbox

/// An app's own reading of a response, before ``HTTPOutboxHandler``'s
/// table (``HTTPOutboxHandler/Configuration/outcomeRules``): the first rule
/// that returns an outcome decides the attempt.
///
/// For a server whose statuses mean something else than the table says —
/// a 410 to a resend that, on this API, only ever follows an applied write
/// (``deliveredOnResend(status:)``), a 404 that means "already deleted".
/// A rule sees every whole answer; an answer cut short (a JSON body ended
/// by the connection) is interrupted before any rule sees it.
public struct HTTPOutcomeRule: Sendable {
    private let decide: @Sendable (HTTPServerAnswer) -> OutboxOutcome?

    /// - Parameter decide: the outcome for an answer, or `nil` to leave it
    ///   to the next rule (and then to the table).
    public init(_ decide: @escaping @Sendable (HTTPServerAnswer) -> OutboxOutcome?) { self.decide = decide }

    /// The outcome this rule gives `answer`, if any.
    public func outcome(for answer: HTTPServerAnswer) -> OutboxOutcome? { decide(answer) }

    /// `status` answering a resend (attempt 2 or later) counts as delivered,
    /// without a server id: on this API it means an earlier attempt applied
    /// the write and the server did not keep its answer. A first attempt
    /// answered with `status` still goes through the table.
    public static func deliveredOnResend(status: Int) -> HTTPOutcomeRule {
        HTTPOutcomeRule { answer in answer.status == status && answer.attempt > 1 ? .delivered(serverID: nil) : nil }
    }
}
