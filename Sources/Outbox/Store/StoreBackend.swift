import OutboxLog

/// Where a store keeps entry bodies and how its changes become durable.
protocol StoreBackend: Sendable {
    /// Prepares a new entry's body before the store takes its lock (encoding
    /// and sealing are not done under the lock).
    func prepare(_ body: EntryBody) throws(OutboxError) -> PreparedBody

    /// Called before the store takes its lock, for each change: waits until
    /// storage can take about `bytes` more (back-pressure), and holds that
    /// room for the change's ``submit(_:newBodies:scheduler:room:)``. The
    /// change is made in memory before it is submitted, so storage must not
    /// refuse it for being full: it waits here instead.
    func reserveRoom(bytes: Int) async throws(OutboxError) -> StoreRoom

    /// Called under the store's lock, in order: hands `changes` to storage
    /// without waiting, in the room reserved for them. The returned
    /// acknowledgement is awaited after the lock is released.
    func submit(
        _ changes: [StoreChange], newBodies: [PreparedBody], scheduler: Scheduler, room: StoreRoom
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

/// Room in storage reserved for one change (see
/// ``StoreBackend/reserveRoom(bytes:)``); storage without a bound has none.
struct StoreRoom: Sendable {
    var reservation: LogRoomReservation?

    static let unbounded = StoreRoom(reservation: nil)
}

/// Waits until submitted changes reach a durability level.
struct StoreAcknowledgement: Sendable {
    let wait: @Sendable (Durability) async throws(OutboxError) -> Void

    static let immediate = StoreAcknowledgement { _ in }
}
