import OutboxLog

/// Where a store keeps entry bodies and how its changes become durable.
protocol StoreBackend: Sendable {
    /// Prepares a new entry's body before the store takes its lock (encoding
    /// and sealing are not done under the lock).
    func prepare(_ body: EntryBody) throws(OutboxError) -> PreparedBody

    /// Called under the store's lock, in order: hands `changes` to storage
    /// without waiting. The returned acknowledgement is awaited after the
    /// lock is released.
    func submit(
        _ changes: [StoreChange], newBody: PreparedBody?, scheduler: Scheduler
    ) throws(OutboxError) -> StoreAcknowledgement

    /// The bodies of live entries (`nil` for an id without one), in the
    /// order given; read together, so a batch costs one trip to the disk.
    func bodies(of ids: [OutboxEntryID]) async throws(OutboxError) -> [EntryBody?]

    func close() async throws(OutboxError)
}

/// A body ready to store: the value, and its encoding if the backend needs one.
struct PreparedBody: Sendable {
    var body: EntryBody
    var encoded: [UInt8]?
    /// What the entry counts for in limits and summaries.
    var storedBytes: Int
}

/// Waits until submitted changes reach a durability level.
struct StoreAcknowledgement: Sendable {
    let wait: @Sendable (Durability) async throws(OutboxError) -> Void

    static let immediate = StoreAcknowledgement { _ in }
}
