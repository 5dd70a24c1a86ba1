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
/// One reader at a time: a ``next(max:)`` while another of the same
/// consumer is running is refused (`invalidArgument`).
public final class QueueConsumer: Sendable {
    /// The consumer's name, its key among the queue's consumers.
    public let name: String
    private let queue: DurableQueue

    private struct State {
        /// The last position read (0: nothing yet).
        var cursor: UInt64
        /// The last position committed (0: nothing yet).
        var committed: UInt64
        var reading = false
        var committing = false
    }

    private let state: Locked<State>

    init(name: String, queue: DurableQueue, committed: UInt64) {
        self.name = name
        self.queue = queue
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

    /// Up to `max` elements after the cursor, in order, and moves the
    /// cursor past them; empty when the consumer is at the end (it does not
    /// wait: ``tail(batch:)`` does).
    ///
    /// - Complexity: O(*b*) in the bytes of the log read, from the segment
    ///   holding the cursor; reading on from the previous page resumes
    ///   where that page stopped.
    public func next(max: Int = 256) async throws(QueueError) -> [QueueElement] {
        guard max >= 1 else { throw QueueError(.invalidArgument, "max must be at least 1, not \(max)") }
        let cursor = try state.withLock { state throws(QueueError) -> UInt64 in
            guard !state.reading else {
                throw QueueError(.invalidArgument, "consumer \(name) is already reading: one reader per consumer")
            }
            state.reading = true
            return state.cursor
        }
        let entries: [LogEntry]
        do { entries = try await queue.elements.entries(after: cursor, limit: max) } catch {
            state.withLock { $0.reading = false }
            throw QueueError.from(error, "consumer \(name) cannot read")
        }
        state.withLock { state in
            state.reading = false
            // A rewind while this read ran wins: its elements come again.
            if state.cursor == cursor, let last = entries.last { state.cursor = last.sequence }
        }
        return entries.map { QueueElement(position: QueuePosition(rawValue: $0.sequence), bytes: $0.value) }
    }

    /// Moves the cursor back to the committed position: the elements read
    /// since are read again (after a failure to process them, say).
    public func rewind() {
        state.withLock { $0.cursor = $0.committed }
    }

    /// Commits that every element up to `position` has been processed: after
    /// a restart the consumer reads from the element after it. Returns once
    /// the commit reached `durability`.
    ///
    /// - Throws: `invalidArgument`, committing nothing, for a position
    ///   before the last commit (commits never go back), after the newest
    ///   element, or while another commit of this consumer is running;
    ///   `closed`; `log`.
    public func commit(through position: QueuePosition, durability: Durability = .durable) async throws(QueueError) {
        let newest = queue.newestPosition?.rawValue ?? 0
        if position.rawValue <= newest { try await queue.elementsReach(position.rawValue, durability) }
        let ticket = try state.withLock { state throws(QueueError) -> LogTicket in
            guard !state.committing else {
                throw QueueError(.invalidArgument, "consumer \(name) is already committing: one commit at a time")
            }
            guard position.rawValue >= state.committed else {
                throw QueueError(.invalidArgument, "consumer \(name) committed \(state.committed); \(position) would go back")
            }
            guard position.rawValue <= newest else {
                throw QueueError(.invalidArgument, "consumer \(name) cannot commit \(position): the newest element is \(newest)")
            }
            let ticket = try queue.offsets.submit(name, position.rawValue)
            state.committing = true
            state.committed = position.rawValue
            state.cursor = max(state.cursor, position.rawValue)
            return ticket
        }
        defer { state.withLock { $0.committing = false } }
        do { try await ticket.wait(for: durability) } catch { throw QueueError.from(error, "consumer \(name) cannot commit") }
    }

    /// The elements after the cursor, then each new one as it is appended,
    /// read `batch` at a time as the loop asks for them (nothing is read
    /// ahead of it). Ends when the queue closes or the task is cancelled;
    /// throws what a read throws. Commit as you go. A loop that stops in the
    /// middle of a batch leaves the batch's other elements read (the cursor
    /// is past them) but not committed: ``rewind()`` to read them again.
    public func tail(batch: Int = 256) -> QueueTail {
        QueueTail(consumer: self, signal: queue.signal, batch: max(1, batch))
    }
}
