import SystemPackage
import OutboxModel

/// Why a look at the spools left something where it was
/// (``OutboxSpoolReport/problems``): the spool concerned, the record where
/// reading stopped if it is damaged there, and the typed cause.
public struct OutboxSpoolProblem: Sendable, Hashable, CustomStringConvertible {
    /// What is affected.
    public enum Kind: Sendable, Hashable {
        /// The spools' directory could not be listed: no spool was looked at.
        case listing
        /// The spool does not open, or fails its key check (damage, or
        /// another key): kept whole, nothing moved in.
        case unusable
        /// A record does not decode: the entries before it were moved in,
        /// it and the rest stay in the spool.
        case damagedRecord
        /// The queue refused an entry for now (it is full): it and the rest
        /// of its spool stay, in order, for a later look.
        case refused
        /// The queue can never take an entry as it was spooled (too large
        /// for its limits, a value no enqueue accepts): its record is kept,
        /// byte for byte as the writer stored it (sealed if the queue is),
        /// in the file ``OutboxSpoolProblem/path`` names, under the spools'
        /// `refused/` directory; the rest of its spool moves in.
        case setAside
        /// Moved in, but the spool could not be closed or deleted: kept, and
        /// its entries are not moved in again (the queue's mark covers them).
        case notDeleted
    }

    /// What is affected.
    public var kind: Kind
    /// The spool's directory (the spools' directory for ``Kind/listing``,
    /// the file the record was kept in for ``Kind/setAside``).
    public var path: FilePath
    /// The spool log's sequence number of the record concerned, when one is.
    public var record: UInt64?
    /// The cause, typed: its ``/OutboxModel/OutboxError/code`` (`.full`, `.wrongKey`,
    /// `.corruptEntry`, `.storage` with the log's error...) says which.
    public var error: OutboxError

    /// A problem of `kind` with the spool at `path`.
    ///
    /// - Parameters:
    ///   - kind: What is affected.
    ///   - path: The spool's directory (or the spools' directory).
    ///   - record: The spool record concerned, if one is.
    ///   - error: The typed cause.
    public init(_ kind: Kind, path: FilePath, record: UInt64? = nil, error: OutboxError) {
        self.kind = kind
        self.path = path
        self.record = record
        self.error = error
    }

    public var description: String {
        "\(path)" + (record.map { ": record \($0)" } ?? "") + ": \(error)"
    }
}
