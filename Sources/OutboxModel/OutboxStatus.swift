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
///   │        │  └──── permanent ─► quarantined ──────────┘
///   │        ▼
///   └──── waitingToRetry  (transient failure; sent again when its time
///                          comes, via inFlight)
/// ```
/// `pending`, `waitingToRetry`, `conflict` and `quarantined` entries can also
/// be quarantined (→ `quarantined`) or discarded (removed); a crash leaves
/// `inFlight` entries `pending` again, with the attempt counted.
///
/// These names are the only ones: the API, the CLI, JSON, the docs and the
/// logs all say `waitingToRetry` and `quarantined`. On disk a status is a
/// one-byte code (Docs/STORE-FORMAT.md).
public enum OutboxStatus: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// Waiting to be sent (for the first time, or again after a retry).
    case pending
    /// Being sent now: an attempt holds a lease on it.
    case inFlight
    /// The last attempt failed transiently; the next is scheduled (see
    /// ``OutboxEntry/nextAttemptAt``).
    case waitingToRetry
    /// Given up on: it will not be sent again without a person's decision
    /// (`OutboxStore/retry(_:at:)` or `OutboxStore/discard(_:)`); the
    /// entry's last error says why.
    case quarantined
    /// The server reported a conflict that needs a decision.
    case conflict
    /// Delivered. Kept only during the configured audit window.
    case succeeded

    public var description: String { rawValue }

    /// The status a name stands for: its `rawValue`, case-insensitively.
    public init?(name: some StringProtocol) {
        let lowered = name.lowercased()
        guard let status = OutboxStatus.allCases.first(where: { $0.rawValue.lowercased() == lowered }) else { return nil }
        self = status
    }

    /// Whether the dispatcher may start an attempt on an entry in this status.
    public var isSendable: Bool { self == .pending || self == .waitingToRetry }

    /// Whether the entry still occupies its place in its scope's order.
    package var holdsScope: Bool { self == .pending || self == .waitingToRetry || self == .inFlight }

    /// The statuses an entry may move to from this one.
    public var allowedTransitions: Set<OutboxStatus> { Set(Self.allCases.filter(canMove(to:))) }

    /// Whether an entry may move from this status to `next`: a switch, not
    /// a look-up in ``allowedTransitions``, because every outcome asks and
    /// a set built per call is an allocation on the hot path.
    package func canMove(to next: OutboxStatus) -> Bool {
        switch (self, next) {
        case (.pending, .inFlight), (.pending, .quarantined): true
        case (.waitingToRetry, .inFlight), (.waitingToRetry, .quarantined): true
        case (.inFlight, .succeeded), (.inFlight, .waitingToRetry), (.inFlight, .quarantined), (.inFlight, .conflict),
            (.inFlight, .pending):
            true
        case (.quarantined, .pending): true
        case (.conflict, .pending), (.conflict, .quarantined), (.conflict, .succeeded): true
        default: false
        }
    }
}
