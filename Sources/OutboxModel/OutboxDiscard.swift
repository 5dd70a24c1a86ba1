/// Why an entry was removed without being delivered
/// (`OutboxEvent/discarded(_:because:)`).
public enum OutboxDiscard: Sendable, Hashable, CustomStringConvertible {
    /// The app discarded it (`OutboxDispatcher/discard(_:)`).
    case byApp
    /// The server's version won a conflict (`OutboxConflictPolicy/serverWins`):
    /// the conflict the server reported.
    case serverWon(OutboxFailure)
    /// It stayed quarantined for longer than
    /// `OutboxDispatcherConfiguration/quarantineRetention`.
    case quarantinedTooLong(Duration)

    /// For people: `discarded by the app`, `the server's version won: …`.
    public var description: String {
        switch self {
        case .byApp: "discarded by the app"
        case .serverWon(let conflict): "the server's version won: \(conflict)"
        case .quarantinedTooLong(let retention):
            "quarantined for longer than the quarantine retention (\(retention.spokenText))"
        }
    }
}
