/// A batch encoded by ``OutboxLog/submit(_:)``: await it to make the batch
/// (and everything before it) reach a durability level.
public struct LogTicket: Sendable {
    let core: LogCore
    /// The sequence number of the batch's last record.
    public let sequence: UInt64

    /// Waits until the batch is `written` or `durable`. With `buffered`,
    /// returns at once unless too many bytes are waiting to be written
    /// (then until this batch is written).
    public func wait(for durability: Durability) async throws(OutboxLogError) {
        try await core.wait(for: sequence, reaching: durability)
    }

    /// Makes the batch reach `durability` now if that needs no waiting —
    /// it already has, or, for `written`, this call can write it in place
    /// (``OutboxLog/Configuration/writesInPlace``) — and returns `true`;
    /// `false` if the caller must await ``wait(for:)``. Throws what
    /// ``wait(for:)`` would (a failed write in place poisons the log).
    package func reachedWithoutWaiting(_ durability: Durability) throws(OutboxLogError) -> Bool {
        try core.reachWithoutWaiting(sequence, durability)
    }

    /// Whether the batch has reached `durability` already, without writing
    /// or waiting (`buffered`: whether ``wait(for:)`` would return at once).
    /// `false` once the log has failed or closed with the batch short of it.
    public func hasReached(_ durability: Durability) -> Bool {
        core.hasReached(sequence, durability)
    }
}
