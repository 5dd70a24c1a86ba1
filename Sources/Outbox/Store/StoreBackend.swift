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

    /// ``reserveRoom(bytes:)`` if the room is there now (the common case),
    /// without suspending; `nil` if it must be waited for (or storage
    /// refuses: the waiting call says why). The default is `nil`.
    func reserveRoomNow(bytes: Int) -> StoreRoom?

    /// Called under the store's lock, in order: hands `changes` to storage
    /// without waiting, in the room reserved for them. The returned
    /// acknowledgement is awaited after the lock is released.
    func submit(
        _ changes: [StoreChange], newBodies: [PreparedBody], scheduler: Scheduler, room: StoreRoom
    ) throws(OutboxError) -> StoreAcknowledgement

    /// Called under the store's lock while it is still loading
    /// (``StoreCore``): hands a new entry's body, numbered `sequence`, to
    /// storage without consulting the scheduler.
    func submitNewBody(_ body: PreparedBody, sequence: UInt64, room: StoreRoom) throws(OutboxError) -> StoreAcknowledgement

    /// The bodies of live entries (`nil` for an id without one), in the
    /// order given; read together, so a batch costs one trip to the disk.
    func bodies(of ids: [OutboxEntryID]) async throws(OutboxError) -> [EntryBody?]

    func close() async throws(OutboxError)

    /// Before an entry whose payload is above the store's threshold is
    /// prepared: writes the payload to a file, durably, and returns what the
    /// entry records instead of the bytes; `nil` for a backend that keeps
    /// every payload inline (the default).
    func storeLargePayload(_ payload: [UInt8], for id: OutboxEntryID) async throws(OutboxError) -> PayloadFileReference?

    /// Deletes the files of entries that were never recorded (a duplicate
    /// enqueue, a refused one).
    func discardUnrecorded(_ files: [(PayloadFileReference, OutboxEntryID)]) async
}

extension StoreBackend {
    /// Stores that load in the foreground never call it.
    func submitNewBody(_ body: PreparedBody, sequence: UInt64, room: StoreRoom) throws(OutboxError) -> StoreAcknowledgement {
        throw OutboxError(.invalidArgument, "this store does not admit entries while it loads")
    }

    func reserveRoomNow(bytes: Int) -> StoreRoom? { nil }
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
    private enum Kind {
        case immediate
        /// The log's ticket for the batch: waiting on it needs no closure
        /// (an allocation per change).
        case ticket(LogTicket)
        case custom(@Sendable (Durability) async throws(OutboxError) -> Void)
    }

    private let kind: Kind

    init(wait: @escaping @Sendable (Durability) async throws(OutboxError) -> Void) { kind = .custom(wait) }

    init(ticket: LogTicket) { kind = .ticket(ticket) }

    private init(kind: Kind) { self.kind = kind }

    static let immediate = StoreAcknowledgement(kind: .immediate)

    /// Brings the changes to `durability` now if that needs no waiting
    /// (already there, or a write in place); `false` if the caller must
    /// await ``wait(_:)``.
    func reachedWithoutWaiting(_ durability: Durability) throws(OutboxError) -> Bool {
        switch kind {
        case .immediate: return true
        case .ticket(let ticket):
            do throws(OutboxLogError) { return try ticket.reachedWithoutWaiting(durability) } catch { throw .storage(error) }
        case .custom: return false
        }
    }

    func wait(_ durability: Durability) async throws(OutboxError) {
        switch kind {
        case .immediate: return
        case .ticket(let ticket):
            do throws(OutboxLogError) { try await ticket.wait(for: durability) } catch { throw .storage(error) }
        case .custom(let wait): try await wait(durability)
        }
    }
}
