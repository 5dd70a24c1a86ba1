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

    /// The failure's code in a state record and a checkpoint (1…6).
    package var code: UInt8 {
        switch self {
        case .quarantined: 1
        case .evicted: 2
        case .unknownToQueue: 3
        case .removed: 4
        case .discarded: 5
        case .gone: 6
        }
    }

    /// The failure a record's `code` and parent id stand for; `nil` for a
    /// code no store writes.
    package init?(code: UInt8, parent: OutboxEntryID) {
        switch code {
        case 1: self = .quarantined(parent)
        case 2: self = .evicted(parent)
        case 3: self = .unknownToQueue(parent)
        case 4: self = .removed(parent)
        case 5: self = .discarded(parent)
        case 6: self = .gone(parent)
        default: return nil
        }
    }

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
