import OutboxLog
import OutboxModel

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

    /// Called under the store's lock, just before a change: reserves room
    /// for about `bytes` if it is there now (the common case), without
    /// waiting; `nil` if it must be waited for with ``reserveRoom(bytes:)``
    /// (or storage refuses: the waiting call says why). Room that no change
    /// uses goes back when it is dropped. The default: no bound,
    /// `.unbounded`.
    func reserveRoomNow(bytes: Int) -> StoreRoom?

    /// Called under the store's lock, in order: hands `changes` to storage
    /// without waiting, in the room reserved for them. The returned
    /// acknowledgement is awaited after the lock is released.
    func submit(
        _ changes: StoreChanges, newBodies: [PreparedBody], scheduler: Scheduler, room: StoreRoom
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

    func reserveRoomNow(bytes: Int) -> StoreRoom? { .unbounded }
}

/// A body ready to store: the value, and its encoding if the backend needs one.
package struct PreparedBody: Sendable {
    package var body: EntryBody
    package var encoded: [UInt8]?
    /// What the entry counts for in limits and summaries.
    var storedBytes: Int
}

/// Room in storage for one change.
enum StoreRoom: Sendable {
    /// Storage without a bound needs none.
    case unbounded
    /// Room in the log, reserved before the store's lock when it had to be
    /// waited for (``StoreBackend/reserveRoom(bytes:)``), or under it when
    /// it was there (``StoreBackend/reserveRoomNow(bytes:)``). Committed
    /// with the change, or given back when dropped.
    case reserved(LogReservation)
}

/// Waits until submitted changes reach a durability level, and then tells
/// the change feed, if one was attached (``announcing(_:to:)``).
///
/// A value without closures or copies: a store makes one per change, so
/// what it holds is the log's ticket and the change list it already has.
struct StoreAcknowledgement: Sendable {
    private enum Kind {
        case immediate
        /// The log's ticket for the batch.
        case ticket(LogTicket)
        /// A backend's own wait and check (tests script durability with them).
        case custom(
            wait: @Sendable (Durability) async throws(OutboxError) -> Void, reached: @Sendable (Durability) -> Bool)
    }

    /// The entries to announce on `feed` once the changes reached the
    /// durability waited for.
    private struct Announcement {
        var changes: StoreChanges
        var feed: OutboxChangeFeed
    }

    private let kind: Kind
    private var announcement: Announcement?

    init(ticket: LogTicket) { kind = .ticket(ticket) }

    init(
        wait: @escaping @Sendable (Durability) async throws(OutboxError) -> Void,
        reached: @escaping @Sendable (Durability) -> Bool
    ) {
        kind = .custom(wait: wait, reached: reached)
    }

    private init(kind: Kind) { self.kind = kind }

    static let immediate = StoreAcknowledgement(kind: .immediate)

    /// This acknowledgement, announcing the entries `changes` touched on
    /// `feed` once it has been waited for (every wait announces: the
    /// observers re-read, so a second announcement costs them one read).
    func announcing(_ changes: StoreChanges, to feed: OutboxChangeFeed) -> StoreAcknowledgement {
        var announced = self
        announced.announcement = Announcement(changes: changes, feed: feed)
        return announced
    }

    /// Brings the changes to `durability` now if that needs no waiting
    /// (already there, or a write in place); `false` if the caller must
    /// await ``wait(_:)``.
    func reachedWithoutWaiting(_ durability: Durability) throws(OutboxError) -> Bool {
        switch kind {
        case .immediate: break
        case .ticket(let ticket):
            let reached: Bool
            do throws(OutboxLogError) { reached = try ticket.reachedWithoutWaiting(durability) } catch { throw .storage(error) }
            guard reached else { return false }
        case .custom: return false
        }
        announce()
        return true
    }

    /// Whether the changes have reached `durability` already; writes nothing
    /// (a store asks under its own lock). A failed log answers `false`: the
    /// wait then reports the failure.
    func hasReached(_ durability: Durability) -> Bool {
        switch kind {
        case .immediate: true
        case .ticket(let ticket): ticket.hasReached(durability)
        case .custom(_, let reached): reached(durability)
        }
    }

    func wait(_ durability: Durability) async throws(OutboxError) {
        switch kind {
        case .immediate: break
        case .ticket(let ticket):
            do throws(OutboxLogError) { try await ticket.wait(for: durability) } catch { throw .storage(error) }
        case .custom(let wait, _): try await wait(durability)
        }
        announce()
    }

    private func announce() {
        guard let announcement else { return }
        announcement.feed.publish(announcement.changes.lazy.compactMap(\.entryID))
    }
}

extension PreparedBody {
    /// `request`'s body as a log-backed store prepares it for a log of
    /// `format` (the same admission and encoding), for tools that write
    /// records a store must read: the torture suite's crafted spools.
    package static func forLog(
        _ request: OutboxEnqueueRequest, partition: String, format: RecordFormat, configuration: OutboxStoreConfiguration,
        now: Int64
    ) throws(OutboxError) -> PreparedBody {
        try StoreCore.prepareBody(request, partition: partition, configuration: configuration, now: now) {
            body throws(OutboxError) in try LogBackend.prepare(body, format: format)
        }
    }

    /// `body` encoded for a log of `format`, as a log-backed store encodes it.
    package static func forLog(_ body: EntryBody, format: RecordFormat) throws(OutboxError) -> PreparedBody {
        try LogBackend.prepare(body, format: format)
    }
}
