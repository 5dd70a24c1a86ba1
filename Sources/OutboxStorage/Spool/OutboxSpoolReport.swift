/// What one look at a queue's spools did (``LogOutboxStore/ingestSpools()``).
public struct OutboxSpoolReport: Sendable, Hashable, CustomStringConvertible {
    /// Spooled entries now in the queue.
    public var ingested = 0
    /// Spooled entries the queue already held (same id, or same app-supplied
    /// key): dropped, as a direct enqueue would have answered `duplicate`.
    public var duplicates = 0
    /// Spooled entries recorded quarantined at once: a dependency the queue does
    /// not know (enqueued in no process, or delivered and forgotten).
    public var quarantined = 0
    /// Spooled entries the queue can never take as they were written (too
    /// large for its limits, or a value no enqueue accepts): each kept in a
    /// file of its own and reported in ``problems`` (``OutboxSpoolProblem/Kind/setAside``).
    public var setAside = 0
    /// Spools emptied and deleted.
    public var spoolsDeleted = 0
    /// Spools still locked by their writer: moved in at a later look.
    public var spoolsBusy = 0
    /// Entries left in their spool (the queue was full, or the spool is
    /// damaged from that record on): kept, and tried again at the next look.
    public var left = 0
    /// Why something was left: the spool, and the typed cause.
    public var problems: [OutboxSpoolProblem] = []

    public init() {}

    public var description: String {
        "ingested \(ingested), duplicates \(duplicates), quarantined \(quarantined), set aside \(setAside), "
            + "spools deleted \(spoolsDeleted), "
            + "busy \(spoolsBusy), left \(left)" + (problems.isEmpty ? "" : "; " + problems.map(\.description).joined(separator: "; "))
    }
}
