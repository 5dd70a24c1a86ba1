/// What opening a ``LogOutboxStore`` found among its payload files
/// (``OutboxStoreConfiguration/largePayloadThreshold``).
public struct OutboxPayloadRecovery: Sendable, Hashable {
    /// Files that no entry referenced, removed: written for an enqueue that
    /// a crash cut before its entry was recorded, or left by an entry that
    /// ended just before a crash. Their names, sorted.
    public var removedOrphans: [String] = []

    public init(removedOrphans: [String] = []) {
        self.removedOrphans = removedOrphans
    }
}
