import Foundation
import OutboxStorage
import OutboxModel

/// Handlers registered by action type, instead of by the raw type string:
/// a typed handler gets its action decoded from the entry's JSON payload as
/// it was enqueued (an ``/OutboxModel/OutboxEntryID`` property is still the local id),
/// and the delivery, whose ``OutboxDelivery/endpoint`` and
/// ``OutboxDelivery/payload`` have the `local:` references replaced by the
/// server's ids — what to send.
///
/// ```swift
/// var handlers = OutboxHandlers()
/// handlers.on(SendMessage.self) { message, delivery in
///     try await chat.send(message.body, to: message.conversationID, key: delivery.idempotencyKey)
///     return .delivered(serverID: nil)
/// }
/// handlers.on(UploadPhoto.self, use: HTTPOutboxHandler(baseURL: api))
/// let dispatcher = OutboxDispatcher(store: store, handlers: handlers)
/// ```
public struct OutboxHandlers: Sendable {
    /// The handlers by entry type (``/OutboxModel/OutboxAction/type``).
    public private(set) var byType: [String: any OutboxHandler] = [:]

    public init() {}

    /// Delivers `Action`s with `deliver`, which gets the action decoded
    /// from the entry's payload as enqueued, and the delivery (references
    /// resolved). A payload that does not decode as `Action` is quarantined
    /// (permanent: it never will), naming the decoding error.
    public mutating func on<Action: OutboxAction & Decodable>(
        _ type: Action.Type, conflictPolicy: OutboxConflictPolicy = .manual,
        _ deliver: @escaping @Sendable (Action, OutboxDelivery) async throws -> OutboxOutcome
    ) {
        byType[Action.type] = TypedOutboxHandler(conflictPolicy: conflictPolicy, deliver: deliver)
    }

    /// Delivers `Action`s with `handler` (an `HTTPOutboxHandler`, say).
    public mutating func on<Action: OutboxAction>(_ type: Action.Type, use handler: any OutboxHandler) {
        byType[Action.type] = handler
    }
}

/// A handler of one action type, decoding it from the delivery's payload.
public struct TypedOutboxHandler<Action: OutboxAction & Decodable>: OutboxHandler {
    public let conflictPolicy: OutboxConflictPolicy
    private let body: @Sendable (Action, OutboxDelivery) async throws -> OutboxOutcome

    public init(
        conflictPolicy: OutboxConflictPolicy = .manual,
        deliver: @escaping @Sendable (Action, OutboxDelivery) async throws -> OutboxOutcome
    ) {
        self.conflictPolicy = conflictPolicy
        self.body = deliver
    }

    public func deliver(_ delivery: OutboxDelivery) async throws -> OutboxOutcome {
        let action: Action
        let payload = delivery.largePayload == nil ? delivery.entry.payload : try await delivery.loadPayload()
        do { action = try JSONDecoder().decode(Action.self, from: Data(payload)) } catch {
            return .permanent(reason: "the payload is not a \(Action.self) (\(Action.type)): \(error)", httpStatus: nil)
        }
        return try await body(action, delivery)
    }
}

extension OutboxDispatcher {
    /// A dispatcher whose handlers are registered by action type; see
    /// ``OutboxHandlers``.
    public init(
        store: any OutboxStore, handlers: OutboxHandlers, fallback: (any OutboxHandler)? = nil,
        configuration: OutboxDispatcherConfiguration = OutboxDispatcherConfiguration(),
        clock: any OutboxClock = SystemOutboxClock()
    ) {
        self.init(store: store, handlers: handlers.byType, fallback: fallback, configuration: configuration, clock: clock)
    }
}
