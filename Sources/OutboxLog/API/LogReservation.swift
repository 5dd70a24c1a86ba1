/// Room under ``OutboxLog/Configuration/maximumPendingBytes`` held for one
/// batch, and the batch committed in it: the reserve-and-commit way to
/// append for a caller that must not be refused once it has changed its own
/// state.
///
/// ``OutboxLog/submit(_:)`` cannot wait, so when too much waits to be
/// written it refuses a batch with ``OutboxLogError/Code/backPressure``. A
/// caller that submits under its own lock, after changing its own state,
/// cannot take that refusal: its state and the log would part. It reserves
/// first — waiting outside its lock if it must — and commits under it:
///
/// ```swift
/// let room = try await log.reserve(bytes: write.frameSize)   // may wait
/// let ticket = try lock.withLock { state in
///     state.apply(change)                        // your own state first,
///     return try room.commit([write])            // then the log: never backPressure
/// }
/// try await ticket.wait(for: .durable)                       // outside the lock
/// ```
///
/// ``OutboxLog/reserveIfAvailable(bytes:)`` takes the room only if it is
/// there now, without waiting: the common case, taken under the caller's
/// lock.
///
/// A reservation serves one ``commit(_:)``, which uses it up whatever its
/// outcome; room that batch did not fill goes to whoever waits for room. A
/// reservation dropped without a commit gives its room back. A batch larger
/// than the reservation is admitted too, and exceeds the bound by the
/// difference: reserve what you will write (``LogWrite/frameSize``).
public final class LogReservation: @unchecked Sendable {
    /// The bytes reserved.
    public let bytes: Int
    private let core: LogCore
    /// Read and written under the log's lock (`core.state`), which every
    /// commit takes anyway, and read without it only in `deinit`, when no
    /// one else can hold the reservation.
    private var unused = true

    init(core: LogCore, bytes: Int) {
        self.core = core
        self.bytes = bytes
    }

    /// Encodes `writes` as one atomic batch into the log now, in the room
    /// reserved, like ``OutboxLog/submit(_:)`` but never refused for
    /// back-pressure; returns the ticket to await. Validation is the same as
    /// ``OutboxLog/append(_:durability:)``, and a refused batch uses the
    /// reservation up too (its room goes back). A second commit throws
    /// `.invalidArgument` and writes nothing.
    public func commit(_ writes: [LogWrite]) throws(OutboxLogError) -> LogTicket {
        LogTicket(core: core, sequence: try core.submit(writes, reservation: self))
    }

    /// Under the log's lock: takes the reservation for a commit; false if it
    /// was taken already.
    func take(_ state: inout LogState) -> Bool {
        defer { unused = false }
        return unused
    }

    deinit {
        if unused { core.releaseRoom(bytes) }
    }
}
