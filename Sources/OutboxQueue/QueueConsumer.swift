import OutboxLocking
import OutboxLog

/// A named reader of a ``DurableQueue``: it reads from a cursor that starts
/// at its committed position, and commits how far it has processed.
///
/// Read with ``next(max:)`` or ``tail(batch:)``, process, then
/// ``commit(through:durability:)``. After a restart (or ``rewind()``) the
/// consumer reads again from its last commit: what was read and not
/// committed is delivered again — at least once, in order.
///
/// One reader and one commit at a time: a ``next(max:)`` while another of
/// the same consumer is running, or a commit while another is, is refused
/// (`invalidArgument`).
public final class QueueConsumer: Sendable {
    /// The consumer's name, its key among the queue's consumers.
    public let name: String
    let logs: QueueLogs
    private let key: LogKey

    private struct State {
        /// The last position read (0: nothing yet).
        var cursor: UInt64
        /// The last position committed (0: nothing yet).
        var committed: UInt64
        /// Bumped by every rewind: a read or a tail's page that started
        /// before one does not move the cursor or yield on.
        var rewinds: UInt64 = 0
        var reading = false
        var committing = false
        /// Set by ``DurableQueue/removeConsumer(named:)``: reads and commits
        /// throw from then on.
        var removed = false
    }

    private let state: Locked<State>

    init(name: String, logs: QueueLogs, committed: UInt64) {
        self.name = name
        self.logs = logs
        key = LogKey(Array(name.utf8))
        state = Locked(State(cursor: committed, committed: committed))
    }

    /// The position of the last element committed, or the start's; `nil`
    /// if the consumer started at the oldest and committed nothing.
    public var committed: QueuePosition? {
        state.withLock { $0.committed == 0 ? nil : QueuePosition(rawValue: $0.committed) }
    }

    /// The position of the last element read (or the committed position
    /// if nothing was read since); `nil` if nothing was.
    public var position: QueuePosition? {
        state.withLock { $0.cursor == 0 ? nil : QueuePosition(rawValue: $0.cursor) }
    }

    /// How many rewinds so far: a tail drops the rest of its page when it
    /// changes.
    var rewinds: UInt64 { state.withLock { $0.rewinds } }

    /// Up to `max` elements after the cursor, in order, and moves the
    /// cursor past them; empty when the consumer is at the end (it does not
    /// wait: ``tail(batch:)`` does).
    ///
    /// - Throws: `damaged` for an element stored shorter than its header
    ///   (a crafted file: the CRC held), moving nothing — commit through its
    ///   position to skip it; `removed`; `invalidArgument`; `closed`; `log`.
    /// - Complexity: O(*b*) in the bytes of the elements returned, when the
    ///   read continues this consumer's previous one (or that of another
    ///   consumer at the same position; the log keeps a few such cursors);
    ///   otherwise from the start of the segment holding the cursor. A read
    ///   at the end of the queue verifies only what was appended since.
    public func next(max: Int = 256) async throws(QueueError) -> [QueueElement] {
        try await read(max: max).elements
    }

    /// ``next(max:)``, and the rewinds counted when the read began: a tail
    /// drops its page when a rewind came after.
    func read(max: Int) async throws(QueueError) -> (elements: [QueueElement], rewinds: UInt64) {
        guard max >= 1 else { throw QueueError(.invalidArgument, "max must be at least 1, not \(max)") }
        let (cursor, rewinds) = try state.withLock { state throws(QueueError) -> (UInt64, UInt64) in
            guard !state.removed else { throw QueueError(.removed, "consumer \(name) was removed") }
            guard !state.reading else {
                throw QueueError(.invalidArgument, "consumer \(name) is already reading: one reader per consumer")
            }
            state.reading = true
            return (state.cursor, state.rewinds)
        }
        let elements: [QueueElement]
        do {
            elements = try await Self.elements(after: cursor, max: max, in: logs.elements)
        } catch {
            state.withLock { $0.reading = false }
            throw error
        }
        state.withLock { state in
            state.reading = false
            // A rewind while this read ran wins: its elements come again.
            if state.rewinds == rewinds, let last = elements.last { state.cursor = Swift.max(state.cursor, last.position.rawValue) }
        }
        return (elements, rewinds)
    }

    /// Up to `max` elements after `cursor`, decoded; a damaged one fails
    /// the read and moves nothing (commit through its position to skip it).
    private static func elements(after cursor: UInt64, max: Int, in log: OutboxLog) async throws(QueueError) -> [QueueElement] {
        let entries: [LogEntry]
        do { entries = try await log.entries(after: cursor, limit: max) } catch { throw QueueError.from(error, "cannot read elements") }
        var elements: [QueueElement] = []
        elements.reserveCapacity(entries.count)
        for entry in entries { elements.append(try ElementRecord.decode(entry, in: log)) }
        return elements
    }

    /// Records the consumer's removal (a tombstone, committed under the
    /// lock its commits take, in `room`) and refuses reads and commits from
    /// then on; await the ticket for its durability.
    func markRemoved(in room: LogReservation) throws(QueueError) -> LogTicket {
        try state.withLock { state throws(QueueError) -> LogTicket in
            let ticket = try ConsumerOffsets.commit(.tombstone(key), in: room, consumer: key)
            state.removed = true
            return ticket
        }
    }

    /// Moves the cursor back to the committed position: the elements read
    /// since are read again (after a failure to process them, say). A tail
    /// drops the rest of the page it was yielding and reads again too.
    public func rewind() {
        state.withLock { state in
            state.cursor = state.committed
            state.rewinds += 1
        }
    }

    /// Commits that every element up to `position` has been processed: after
    /// a restart the consumer reads from the element after it. The elements
    /// it covers are first made as durable as the commit. Returns once the
    /// commit reached `durability`; only then does ``committed`` move.
    ///
    /// - Throws: `invalidArgument`, committing nothing, for a position
    ///   before the last commit (commits never go back), after the newest
    ///   element, or while another commit of this consumer is running;
    ///   `removed` once the consumer was removed; `closed`; `log`.
    public func commit(through position: QueuePosition, durability: Durability = .durable) async throws(QueueError) {
        let newest = logs.newest
        try state.withLock { state throws(QueueError) in
            guard !state.removed else { throw QueueError(.removed, "consumer \(name) was removed") }
            guard !state.committing else {
                throw QueueError(.invalidArgument, "consumer \(name) is already committing: one commit at a time")
            }
            guard position.rawValue >= state.committed else {
                throw QueueError(.invalidArgument, "consumer \(name) committed \(state.committed); \(position) would go back")
            }
            guard position.rawValue <= newest else {
                throw QueueError(.invalidArgument, "consumer \(name) cannot commit \(position): the newest element is \(newest)")
            }
            state.committing = true
        }
        defer { state.withLock { $0.committing = false } }
        try await logs.elementsReach(position.rawValue, durability)
        let room = try await logs.offsets.room()
        // Under the lock that a removal takes too: a commit is recorded
        // before the removal's tombstone, or not at all.
        let ticket = try state.withLock { state throws(QueueError) -> LogTicket in
            guard !state.removed else { throw QueueError(.removed, "consumer \(name) was removed") }
            return try ConsumerOffsets.commit(.value(key, ConsumerOffsets.encode(position.rawValue)), in: room, consumer: key)
        }
        do { try await ticket.wait(for: durability) } catch { throw QueueError.from(error, "consumer \(name) cannot commit") }
        state.withLock { state in
            state.committed = Swift.max(state.committed, position.rawValue)
            state.cursor = Swift.max(state.cursor, position.rawValue)
        }
    }

    /// The elements after the cursor, then each new one as it is appended,
    /// read `batch` at a time as the loop asks for them (nothing is read
    /// ahead of it). Ends when the queue closes or the task is cancelled;
    /// throws what a read throws (a ``QueueError``). Commit as you go; after
    /// a ``rewind()`` the tail reads again from the committed position. A
    /// loop that stops in the middle of a batch leaves the batch's other
    /// elements read (the cursor is past them) but not committed:
    /// ``rewind()`` to read them again.
    public func tail(batch: Int = 256) -> QueueTail {
        QueueTail(consumer: self, signal: logs.signal, batch: Swift.max(1, batch))
    }

    /// The elements after the cursor in batches of up to `max`, then each
    /// batch of new elements as they are appended: what is there is read at
    /// once, so a consumer that keeps up gets small batches and one that
    /// falls behind gets full ones. Ends when the queue closes or the task
    /// is cancelled; throws what a read throws (a ``QueueError``). Commit
    /// through a batch's last position once it is processed.
    public func batches(max: Int = 256) -> QueueBatches {
        QueueBatches(consumer: self, signal: logs.signal, max: Swift.max(1, max))
    }
}
