/// Why an entry was quarantined because of one of its dependencies.
///
/// The one place these reasons are written and read back: an entry's
/// failure reason is kept as text in its state record (Docs/FORMAT.md), and
/// reviving dependents must know which parent a reason names. So
/// ``init(reason:)`` accepts exactly what ``reason`` writes — the prefix,
/// a whole entry id and one of the phrases below — rather than testing a
/// reason for a prefix (which a handler's own reason could share).
enum DependencyFailure: Hashable, Sendable {
    /// The parent is quarantined.
    case quarantined(OutboxEntryID)
    /// The parent was evicted to make room (outbox full).
    case evicted(OutboxEntryID)
    /// A spooled entry names a parent this queue never saw.
    case unknownToQueue(OutboxEntryID)
    /// The parent was removed (`removeAll(matching:)`).
    case removed(OutboxEntryID)
    /// The parent was discarded by the app.
    case discarded(OutboxEntryID)
    /// The parent was discarded because the server's version won a conflict.
    case discardedServerWins(OutboxEntryID)
    /// The parent is gone without having been delivered (found so when a
    /// dependent is revived: how it went is not recorded).
    case gone(OutboxEntryID)

    static let prefix = "dependencyFailed: "

    /// The parent this failure names.
    var parent: OutboxEntryID {
        switch self {
        case .quarantined(let id), .evicted(let id), .unknownToQueue(let id), .removed(let id), .discarded(let id),
            .discardedServerWins(let id), .gone(let id):
            return id
        }
    }

    /// The reason as recorded and shown: `dependencyFailed: <parent> <phrase>`.
    var reason: String { "\(Self.prefix)\(parent) \(Self.phrase(of: self))" }

    /// Parses a reason that ``reason`` wrote; `nil` for any other text.
    init?(reason: String) {
        guard reason.hasPrefix(Self.prefix) else { return nil }
        let rest = reason.dropFirst(Self.prefix.count)
        guard let space = rest.firstIndex(of: " "), let parent = OutboxEntryID(rest[..<space]),
            !rest[..<space].hasPrefix(OutboxEntryID.localPrefix)
        else { return nil }
        let phrase = rest[rest.index(after: space)...]
        let candidates: [DependencyFailure] = [
            .quarantined(parent), .evicted(parent), .unknownToQueue(parent), .removed(parent), .discarded(parent),
            .discardedServerWins(parent), .gone(parent),
        ]
        guard let match = candidates.first(where: { Self.phrase(of: $0) == phrase }) else { return nil }
        self = match
    }

    private static func phrase(of failure: DependencyFailure) -> String {
        switch failure {
        case .quarantined: return "is quarantined"
        case .evicted: return "was evicted (outbox full)"
        case .unknownToQueue: return "is unknown to this queue (spooled by another process)"
        case .removed: return "was removed"
        case .discarded: return "was discarded"
        case .discardedServerWins: return "was discarded (server wins)"
        case .gone: return "is gone without having been delivered"
        }
    }
}
