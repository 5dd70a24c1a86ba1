/// Why an entry was quarantined because of one of its dependencies: which
/// parent, and what became of it (``OutboxFailure/Cause/dependency(_:)``).
///
/// A store keeps it as a code and the parent's id, so that retrying the
/// parent revives exactly the dependents it holds back.
public enum OutboxDependencyFailure: Hashable, Sendable, CustomStringConvertible {
    /// The parent is quarantined.
    case quarantined(OutboxEntryID)
    /// The parent was evicted to make room (outbox full).
    case evicted(OutboxEntryID)
    /// A spooled entry names a parent this queue never saw.
    case unknownToQueue(OutboxEntryID)
    /// The parent was removed with the other quarantined entries past their
    /// retention (`removeQuarantined(before:)`).
    case removed(OutboxEntryID)
    /// The parent was discarded (by the app, or because the server's
    /// version won a conflict).
    case discarded(OutboxEntryID)
    /// The parent is gone without having been delivered (found so when a
    /// dependent is revived: how it went is not recorded).
    case gone(OutboxEntryID)

    /// The parent this failure names.
    public var parent: OutboxEntryID {
        switch self {
        case .quarantined(let id), .evicted(let id), .unknownToQueue(let id), .removed(let id), .discarded(let id),
            .gone(let id):
            return id
        }
    }

    /// The case's name, as the CLI's JSON says it (`parentFate`).
    public var name: String {
        switch self {
        case .quarantined: "quarantined"
        case .evicted: "evicted"
        case .unknownToQueue: "unknownToQueue"
        case .removed: "removed"
        case .discarded: "discarded"
        case .gone: "gone"
        }
    }

    /// For people: `dependency <parent> is quarantined`.
    public var description: String { "dependency \(parent) \(Self.phrase(of: self))" }

    private static func phrase(of failure: OutboxDependencyFailure) -> String {
        switch failure {
        case .quarantined: return "is quarantined"
        case .evicted: return "was evicted (outbox full)"
        case .unknownToQueue: return "is unknown to this queue (spooled by another process)"
        case .removed: return "was removed"
        case .discarded: return "was discarded"
        case .gone: return "is gone without having been delivered"
        }
    }
}
