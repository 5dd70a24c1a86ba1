import Foundation
import OutboxStorage
import OutboxModel

/// Delivers the entries of one or more types: the per-feature code that
/// knows what an entry means. The dispatcher has no feature-specific
/// branches; it routes each entry to the handler registered for its type.
///
/// A handler returns an ``OutboxOutcome``; anything it throws counts as a
/// transient failure. It must send ``OutboxDelivery/idempotencyKey`` with
/// every attempt, so the server applies the write once however often it
/// arrives.
public protocol OutboxHandler: Sendable {
    /// What to do when delivery reports a conflict. Default: `.manual`.
    var conflictPolicy: OutboxConflictPolicy { get }

    /// Attempts one delivery.
    func deliver(_ delivery: OutboxDelivery) async throws -> OutboxOutcome

    /// For ``OutboxConflictPolicy/clientWins``: resend so the client's
    /// version wins (a forced `PUT`, say). Another conflict leaves the entry
    /// in `conflict`. Default: reports the conflict again.
    func resendAfterConflict(_ delivery: OutboxDelivery) async throws -> OutboxOutcome
}

extension OutboxHandler {
    public var conflictPolicy: OutboxConflictPolicy { .manual }

    public func resendAfterConflict(_ delivery: OutboxDelivery) async throws -> OutboxOutcome {
        .conflict(reason: "no client-wins resend is defined", httpStatus: nil)
    }
}

/// A handler written as a closure, for tests and small apps.
public struct ClosureOutboxHandler: OutboxHandler {
    public let conflictPolicy: OutboxConflictPolicy
    private let body: @Sendable (OutboxDelivery) async throws -> OutboxOutcome
    private let resend: (@Sendable (OutboxDelivery) async throws -> OutboxOutcome)?

    /// - Parameters:
    ///   - conflictPolicy: what to do with a conflict.
    ///   - body: delivers one entry.
    ///   - resend: for ``OutboxConflictPolicy/clientWins``, the forced
    ///     resend after a conflict; `nil` reports the conflict again.
    public init(
        conflictPolicy: OutboxConflictPolicy = .manual, _ body: @escaping @Sendable (OutboxDelivery) async throws -> OutboxOutcome,
        resend: (@Sendable (OutboxDelivery) async throws -> OutboxOutcome)? = nil
    ) {
        self.conflictPolicy = conflictPolicy
        self.body = body
        self.resend = resend
    }

    public func deliver(_ delivery: OutboxDelivery) async throws -> OutboxOutcome { try await body(delivery) }

    public func resendAfterConflict(_ delivery: OutboxDelivery) async throws -> OutboxOutcome {
        guard let resend else { return .conflict(reason: "no client-wins resend is defined", httpStatus: nil) }
        return try await resend(delivery)
    }
}

/// What a handler is asked to deliver: the entry, with every `local:`
/// reference already replaced by the server id it now has.
public struct OutboxDelivery: Sendable, Hashable {
    /// The stored entry (its endpoint and payload as enqueued).
    public var entry: OutboxEntry
    /// The endpoint to call, `local:` references resolved.
    public var endpoint: String
    /// The body to send, `local:` references in JSON strings resolved.
    public var payload: [UInt8]
    /// This attempt's number, from 1.
    public var attempt: Int

    public init(entry: OutboxEntry, endpoint: String, payload: [UInt8], attempt: Int) {
        self.entry = entry
        self.endpoint = endpoint
        self.payload = payload
        self.attempt = attempt
    }

    /// The body, when the store keeps it in a file because it is larger
    /// than `OutboxStoreConfiguration.largePayloadThreshold`: ``payload`` is
    /// then empty. Its `local:` references are not replaced (it is sent as
    /// it was enqueued); the dispatcher has checked the whole file before
    /// this attempt. Stream it (``/OutboxModel/OutboxLargePayload/makeChunkReader(chunkBytes:)``)
    /// or read it whole (``loadPayload()``).
    public var largePayload: OutboxLargePayload? { entry.largePayload }

    /// The body to send, wherever it is kept: ``payload``, or the file of
    /// ``largePayload`` (read off the cooperative pool, and checked).
    public func loadPayload() async throws(OutboxError) -> [UInt8] {
        guard let largePayload else { return payload }
        return try await largePayload.bytes()
    }

    public var id: OutboxEntry.ID { entry.id }
    public var idempotencyKey: String { entry.idempotencyKey }
    public var method: String { entry.method }
    public var headers: [String: String] { entry.headers }
}

/// What became of one delivery attempt.
public enum OutboxOutcome: Sendable, Hashable {
    /// Delivered; `serverID` is what the server calls the created thing.
    case delivered(serverID: String?)
    /// Delivered by an earlier attempt whose answer was lost: the server
    /// answered this one from its idempotency record (`Idempotent-Replayed:
    /// true`). Recorded as ``delivered(serverID:)``, and counted as a replay.
    case replayed(serverID: String?)
    /// Will never succeed as it is (a 4xx): quarantine it for a person.
    case permanent(reason: String, httpStatus: Int?)
    /// May succeed later (offline, timeout, 5xx, 429): retry after a backoff,
    /// or after `retryAfter` if the server said so.
    case transient(reason: String, httpStatus: Int?, retryAfter: Duration?)
    /// The server holds a conflicting version: apply the handler's policy.
    case conflict(reason: String, httpStatus: Int?)
    /// The request never (fully) reached the server — connection refused,
    /// host not found, network unreachable, reset before the request was
    /// sent — so nothing can have been applied. Retried with capped backoff
    /// and **not** counted toward `maxAttempts`: an outage never kills a
    /// write (only ``OutboxDispatcherConfiguration/maximumAge``, counted
    /// from the server's first answer, does).
    case notSent(reason: String)
    /// The request was sent whole but no answer came back (the connection
    /// closed or reset, the request timed out, our attempt was cancelled):
    /// it may have been applied. Resent promptly, after a short bounded
    /// delay (the idempotency key makes that safe); not a failed attempt.
    case interrupted(reason: String)
    /// The server is still processing an earlier request with this key (a
    /// 409 with `Retry-After`, a problem document saying so, or a 409 to a
    /// resend after an unknown outcome): poll again after `retryAfter`, or
    /// after a short jittered delay (``OutboxDispatcherConfiguration/inProgressBackoff``).
    /// Not a failed attempt; past ``OutboxDispatcherConfiguration/inProgressBudget``
    /// the entry is left in `conflict` for the app.
    case inProgress(reason: String, retryAfter: Duration?)
    /// The server says it has already processed this key but cannot give
    /// its answer (410 "response not stored", 422 "key reused" after an
    /// answer was lost): the write was most likely applied. The entry is left
    /// in `conflict` for the app, whatever the conflict policy, and its
    /// dependents are not quarantined.
    case alreadyProcessed(reason: String, httpStatus: Int?)
}

/// What the dispatcher does with a conflict.
public enum OutboxConflictPolicy: Sendable, Hashable {
    /// The server's version stands: discard the entry and report it.
    case serverWins
    /// The client's version must win: call ``OutboxHandler/resendAfterConflict(_:)``.
    case clientWins
    /// Leave the entry in `conflict` for the app (or a person) to decide.
    case manual
}
