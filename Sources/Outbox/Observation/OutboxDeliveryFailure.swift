import OutboxModel

/// Why ``OutboxDispatcher/waitUntilDelivered(_:)`` gave up on an entry:
/// it will not be delivered without the app or a person.
public struct OutboxDeliveryFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// Quarantined: the server refused it, it ran out of
        /// attempts or of age, or a dependency failed. ``OutboxDispatcher/retry(_:)``
        /// or ``OutboxDispatcher/discard(_:)``.
        case quarantined
        /// Left in `conflict` for the app: a conflict, or an answer it
        /// cannot read as delivered or not (``OutboxDispatcher/retry(_:)``,
        /// ``OutboxDispatcher/markDelivered(_:serverID:)`` or discard).
        case conflict
        /// Removed without being delivered (discarded, replaced by a
        /// coalescing enqueue, or server-wins conflict).
        case discarded
    }

    public var id: OutboxEntry.ID
    public var kind: Kind
    /// Why the entry was set aside (its ``/OutboxModel/OutboxEntry/lastFailure``), when
    /// known; `nil` for a removed entry.
    public var failure: OutboxFailure?

    public init(id: OutboxEntry.ID, kind: Kind, failure: OutboxFailure?) {
        self.id = id
        self.kind = kind
        self.failure = failure
    }

    public var description: String {
        let what: String
        switch kind {
        case .quarantined: what = "quarantined"
        case .conflict: what = "left in conflict"
        case .discarded: what = "removed without delivery"
        }
        return "entry \(id) was \(what)" + (failure.map { ": \($0)" } ?? "")
    }
}
