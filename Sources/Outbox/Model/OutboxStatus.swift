/// Where an outbox entry is in its life.
///
/// ```
///            enqueue
///               │
///               ▼
///   ┌──────► pending ◄────────────── retry ─────────────┐
///   │           │ begin attempt                          │
///   │           ▼                                        │
///   │        inFlight ──── success ───► succeeded        │
///   │        │  │  │                   (removed, or kept │
///   │        │  │  └─ conflict ──► conflict ─────────────┤
///   │        │  │        (the app found it applied: ──► succeeded)
///   │        │  └──── permanent ─► dead ─────────────────┘
///   │        ▼
///   └──── failed  (transient; retried when its time comes, via inFlight)
/// ```
/// `pending`, `failed`, `conflict` and `dead` entries can also be
/// quarantined (→ `dead`) or discarded (removed); a crash leaves `inFlight`
/// entries `pending` again, with the attempt counted.
public enum OutboxStatus: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// Waiting to be sent (for the first time, or again after a retry).
    case pending
    /// Being sent now: an attempt holds a lease on it.
    case inFlight
    /// The last attempt failed transiently; the next is scheduled.
    case failed
    /// Quarantined: it will not be sent again without a person's decision
    /// (``OutboxStore/retry(_:at:)`` or ``OutboxStore/discard(_:)``).
    case dead
    /// The server reported a conflict that needs a decision.
    case conflict
    /// Delivered. Kept only during the configured audit window.
    case succeeded

    public var description: String { rawValue }

    /// Whether the dispatcher may start an attempt on an entry in this status.
    public var isSendable: Bool { self == .pending || self == .failed }

    /// Whether the entry still occupies its place in its scope's order.
    var holdsScope: Bool { self == .pending || self == .failed || self == .inFlight }

    /// The statuses an entry may move to from this one.
    public var allowedTransitions: Set<OutboxStatus> {
        switch self {
        case .pending: [.inFlight, .dead]
        case .failed: [.inFlight, .dead]
        case .inFlight: [.succeeded, .failed, .dead, .conflict, .pending]
        case .dead: [.pending]
        case .conflict: [.pending, .dead, .succeeded]
        case .succeeded: []
        }
    }

    func canMove(to next: OutboxStatus) -> Bool { allowedTransitions.contains(next) }

    var code: UInt8 {
        switch self {
        case .pending: 0
        case .inFlight: 1
        case .failed: 2
        case .dead: 3
        case .conflict: 4
        case .succeeded: 5
        }
    }

    init?(code: UInt8) {
        switch code {
        case 0: self = .pending
        case 1: self = .inFlight
        case 2: self = .failed
        case 3: self = .dead
        case 4: self = .conflict
        case 5: self = .succeeded
        default: return nil
        }
    }
}
