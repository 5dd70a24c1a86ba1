/// What opening a ``LogOutboxStore`` found among its payload files
/// (``OutboxStoreConfiguration/largePayloadThreshold``).
public struct OutboxPayloadRecovery: Sendable, Hashable {
    /// Files that no entry referenced, removed: written for an enqueue that
    /// a crash cut before its entry was recorded, or left by an entry that
    /// ended just before a crash. Their names, sorted.
    public var removedOrphans: [String] = []
    /// Items in `payloads/` that no store writes there (a directory, say):
    /// moved aside, never deleted, to `damaged/payloads+<name>` in the
    /// queue's directory, or left where they were if even that failed.
    /// Their names, sorted.
    public var movedAside: [String] = []

    public init(removedOrphans: [String] = [], movedAside: [String] = []) {
        self.removedOrphans = removedOrphans
        self.movedAside = movedAside
    }
}
