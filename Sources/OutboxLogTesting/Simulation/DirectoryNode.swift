/// Identifies a file or directory (an inode). Assigned in creation order, so
/// identical operation sequences give identical identifiers: power-loss
/// randomness is derived from them.
typealias NodeID = UInt64

/// A change to one directory's entries that is visible but not yet durable.
///
/// A rename within one directory is a single operation, so a power loss
/// keeps it or drops it whole: the destination name holds either the old or
/// the new file, never nothing (rename(2)'s atomic replace). A rename across
/// directories is an `unlink` in one and a `link` in the other, which become
/// durable independently, as POSIX allows (the file can end up under both
/// names or under neither).
enum NamespaceOperation: Sendable {
    /// `name` now refers to `node` (create, mkdir, or the arriving half of a
    /// cross-directory rename; replaces any previous entry).
    case link(name: String, node: NodeID)
    /// `name` no longer exists (unlink, rmdir, or the leaving half of a
    /// cross-directory rename).
    case unlink(name: String)
    /// `from` moved to `to` within this directory, replacing `to`.
    case rename(from: String, to: String, node: NodeID)

    func apply(to entries: inout [String: NodeID]) {
        switch self {
        case .link(let name, let node):
            entries[name] = node
        case .unlink(let name):
            entries[name] = nil
        case .rename(let from, let to, let node):
            entries[from] = nil
            entries[to] = node
        }
    }

    /// The node this operation makes reachable, if any.
    var linkedNode: NodeID? {
        switch self {
        case .link(_, let node), .rename(_, _, let node): node
        case .unlink: nil
        }
    }
}

/// One directory: its visible entries and its durable entries.
///
/// Invariant: `durableEntries` + `unsynced` replayed in order == `entries`
/// (a failed directory sync changes nothing, so nothing breaks it).
struct DirectoryNode: Sendable {
    /// What `contentsOfDirectory` and path lookups see.
    var entries: [String: NodeID] = [:]
    /// What the directory holds on stable storage.
    var durableEntries: [String: NodeID] = [:]
    /// Entry changes since the last successful directory sync, oldest first.
    var unsynced: [NamespaceOperation] = []

    mutating func perform(_ operation: NamespaceOperation) {
        operation.apply(to: &entries)
        unsynced.append(operation)
    }

    /// A successful fsync of the directory.
    mutating func synchronize() {
        durableEntries = entries
        unsynced.removeAll()
    }

    /// After a power loss: the surviving entries are both visible and durable.
    mutating func reset(to entries: [String: NodeID]) {
        self.entries = entries
        durableEntries = entries
        unsynced.removeAll()
    }
}
