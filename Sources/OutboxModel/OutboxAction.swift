import Foundation

/// A server-bound write a feature records in the outbox.
///
/// Features implement this next to their own code; the outbox core never
/// imports a feature. Only ``type``, ``method``, ``endpoint`` and
/// ``payload()`` are required:
///
/// ```swift
/// struct SendMessage: OutboxAction, Encodable {
///     static let type = "send_message"
///     let conversationID: String
///     let body: String
///     var method: String { "POST" }
///     var endpoint: String { "/conversations/\(conversationID)/messages" }
///     var scope: String? { "conversation:\(conversationID)" }   // in order, per conversation
/// }
/// ```
/// An `Encodable` action's payload is its JSON encoding.
public protocol OutboxAction: Sendable {
    /// The discriminator that routes the entry to its handler.
    static var type: String { get }
    /// The HTTP method.
    var method: String { get }
    /// The endpoint relative to the base URL; may contain `local:` references.
    var endpoint: String { get }
    /// The request body.
    func payload() throws -> [UInt8]
    /// Entries with the same scope are sent one at a time, in order. `nil`:
    /// independent of everything else.
    var scope: String? { get }
    /// Entries that must succeed first (an entity created offline, say).
    var dependencies: [OutboxEntry.ID] { get }
    /// Higher drains first.
    var priority: Int { get }
    /// A later enqueue with the same key replaces a still-pending one
    /// (likes, toggles, "last known position").
    var coalescingKey: String? { get }
    /// Extra non-secret headers (`Content-Type`, say). Never auth.
    var headers: [String: String] { get }
    /// How many attempts before a transient failure quarantines the entry;
    /// `nil` uses the store's default.
    var maxAttempts: Int? { get }
}

extension OutboxAction {
    public var scope: String? { nil }
    public var dependencies: [OutboxEntry.ID] { [] }
    public var priority: Int { 0 }
    public var coalescingKey: String? { nil }
    public var headers: [String: String] { [:] }
    public var maxAttempts: Int? { nil }
}

extension OutboxAction where Self: Encodable {
    /// The action's JSON encoding.
    public func payload() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(self))
    }

    public var headers: [String: String] { ["Content-Type": "application/json"] }
}

/// Everything needed to enqueue one entry; built from an ``OutboxAction`` or
/// directly (the CLI and tests do).
public struct OutboxEnqueueRequest: Sendable, Hashable {
    /// The entry's id. Enqueueing the same id twice yields one entry.
    public var id: OutboxEntry.ID
    /// The key sent as `Idempotency-Key` with every attempt, or `nil` (the
    /// default) to derive it from the partition and ``id``
    /// (``OutboxEntry/derivedIdempotencyKey(partition:id:)``).
    ///
    /// Pass one when a retry of the enqueue cannot reproduce the id: an app
    /// that mints a fresh id per call but has its own name for the write
    /// (a form submission, a payment intent, a key the server handed out).
    /// Enqueueing a key the partition already holds — pending, in flight,
    /// quarantined, or delivered within `mappingRetention` — returns
    /// ``OutboxEnqueueResult/duplicate(_:status:)`` with the existing
    /// entry's id and writes nothing. 1 to 255 visible ASCII characters;
    /// make it unguessable if your server does not scope keys per user.
    public var idempotencyKey: String?
    public var type: String
    public var method: String
    public var endpoint: String
    public var payload: [UInt8]
    public var headers: [String: String]
    public var scope: String?
    public var dependencies: [OutboxEntry.ID]
    public var priority: Int
    public var coalescingKey: String?
    public var maxAttempts: Int?
    public var createdAt: Date

    public init(
        id: OutboxEntry.ID = OutboxEntry.ID(), idempotencyKey: String? = nil, type: String, method: String,
        endpoint: String, payload: [UInt8] = [], headers: [String: String] = [:], scope: String? = nil,
        dependencies: [OutboxEntry.ID] = [], priority: Int = 0, coalescingKey: String? = nil,
        maxAttempts: Int? = nil, createdAt: Date = Date()
    ) {
        self.id = id
        self.idempotencyKey = idempotencyKey
        self.type = type
        self.method = method
        self.endpoint = endpoint
        self.payload = payload
        self.headers = headers
        self.scope = scope
        self.dependencies = dependencies
        self.priority = priority
        self.coalescingKey = coalescingKey
        self.maxAttempts = maxAttempts
        self.createdAt = createdAt
    }

    /// The request for `action`, with a fresh id unless one is given, and
    /// the idempotency key derived from the id unless one is given (see
    /// ``idempotencyKey``).
    public init<Action: OutboxAction>(
        _ action: Action, id: OutboxEntry.ID = OutboxEntry.ID(), idempotencyKey: String? = nil, createdAt: Date = Date()
    ) throws {
        self.init(
            id: id, idempotencyKey: idempotencyKey, type: Action.type, method: action.method, endpoint: action.endpoint,
            payload: try action.payload(), headers: action.headers, scope: action.scope,
            dependencies: action.dependencies, priority: action.priority, coalescingKey: action.coalescingKey,
            maxAttempts: action.maxAttempts, createdAt: createdAt)
    }
}

/// What an `OutboxStore.enqueue(_:)` did.
public enum OutboxEnqueueResult: Sendable, Hashable {
    /// A new entry.
    case enqueued(OutboxEntry)
    /// A new entry that replaced the pending entry with the same coalescing key.
    case coalesced(OutboxEntry, replaced: OutboxEntry.ID)
    /// The id (or the app-supplied idempotency key) was already enqueued:
    /// nothing was written. The id is the existing entry's (for a key, it
    /// may differ from the request's id); `status` is `succeeded` if it was
    /// delivered.
    case duplicate(OutboxEntry.ID, status: OutboxStatus)

    /// The entry's id.
    public var id: OutboxEntry.ID {
        switch self {
        case .enqueued(let entry), .coalesced(let entry, _): entry.id
        case .duplicate(let id, _): id
        }
    }
}
