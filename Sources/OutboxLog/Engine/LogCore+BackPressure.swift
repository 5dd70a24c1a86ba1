/// Back-pressure: at most ``OutboxLog/Configuration/maximumPendingBytes`` of
/// appended records wait in memory for the writer, whatever the entry point.
///
/// A batch is *admitted* — allowed to be encoded — when the bytes already
/// waiting (plus those granted to appends about to encode) leave room for it,
/// or when nothing waits at all (so a batch larger than the bound is written
/// alone rather than never). Admission is first come, first served:
/// - ``append(_:durability:)`` that is not admitted waits, without blocking
///   a thread, until the writer has written enough; the room is then
///   reserved for it, so a later caller cannot take it first;
/// - ``submit(_:)``, which cannot wait (it runs under its caller's lock), is
///   refused with ``OutboxLogError/Code/backPressure`` and writes nothing;
///   ``waitForRoom(bytes:)`` waits until it would be admitted;
/// - ``LogReservation/commit(_:)`` is always admitted: its room was reserved
///   (waited for) first, and counts as reserved bytes until the commit.
struct RoomWaiter {
    var bytes: Int
    /// Resumed once: with success when room is reserved, or with the error
    /// that makes the log refuse appends.
    var continuation: UnsafeContinuation<Result<Void, OutboxLogError>, Never>
}

extension LogState {
    /// Whether a batch of `bytes` may be encoded now.
    func admits(_ bytes: Int, maximum: Int) -> Bool {
        roomWaiters.isEmpty && hasRoom(for: bytes, maximum: maximum)
    }

    private func hasRoom(for bytes: Int, maximum: Int) -> Bool {
        let committed = pendingBytes + reservedBytes
        return committed == 0 || committed + bytes <= maximum
    }

    /// Reserves room for waiting appends, in order, as far as it goes;
    /// returns the ones to resume.
    mutating func grantRoom(maximum: Int) -> [RoomWaiter] {
        var granted: [RoomWaiter] = []
        while let first = roomWaiters.first, hasRoom(for: first.bytes, maximum: maximum) {
            roomWaiters.removeFirst()
            reservedBytes += first.bytes
            granted.append(first)
        }
        return granted
    }
}

extension LogCore {
    /// Waits until room for `bytes` is reserved for the caller, who then
    /// encodes with ``LogState/takeRoom(_:reserved:maximum:)`` (or gives
    /// the room back with ``releaseRoom(_:)``).
    func reserveRoom(_ bytes: Int) async throws(OutboxLogError) {
        // Room at once (the common case, for every change of the outbox
        // store): no suspension.
        let reserved = try state.withLock { state throws(OutboxLogError) -> Bool in
            if let error = state.isAcceptingWrites { throw error }
            guard state.admits(bytes, maximum: configuration.maximumPendingBytes) else { return false }
            state.reservedBytes += bytes
            return true
        }
        if reserved { return }
        try await waitForReservation(bytes)
    }

    /// Reserves room for `bytes` if it is there now; `false` (nothing
    /// reserved) if the log refuses writes or the room must be waited for.
    func reserveRoomNow(_ bytes: Int) -> Bool {
        state.withLock { state -> Bool in
            guard state.isAcceptingWrites == nil, state.admits(bytes, maximum: configuration.maximumPendingBytes) else {
                return false
            }
            state.reservedBytes += bytes
            return true
        }
    }

    private func waitForReservation(_ bytes: Int) async throws(OutboxLogError) {
        try await park { state, continuation in
            if let error = state.isAcceptingWrites { return .failure(error) }
            if state.admits(bytes, maximum: configuration.maximumPendingBytes) {
                state.reservedBytes += bytes
                return nil
            }
            state.roomWaiters.append(RoomWaiter(bytes: bytes, continuation: continuation))
            // The writer writes whatever is pending while anyone waits for room.
            return .success(state.claimWriterWakeup())
        }
    }

    /// Gives back room reserved and not used.
    func releaseRoom(_ bytes: Int) {
        let granted = state.withLock { state -> [RoomWaiter] in
            state.reservedBytes -= bytes
            return state.grantRoom(maximum: configuration.maximumPendingBytes)
        }
        for waiter in granted { waiter.continuation.resume(returning: .success(())) }
    }

    /// Waits until a batch of `bytes` would be admitted now (see
    /// ``OutboxLog/waitForRoom(bytes:)``).
    func waitForRoom(bytes: Int) async throws(OutboxLogError) {
        try await reserveRoom(bytes)
        releaseRoom(bytes)
    }
}

extension LogState {
    /// Whether buffered bytes just encoded must be handed to the writer now:
    /// enough of them, or appends waiting for the room they take.
    func writeIsDue(_ configuration: OutboxLog.Configuration) -> Bool {
        pendingBytes >= configuration.bufferedFlushThreshold || !roomWaiters.isEmpty
    }

    /// Under the lock, before encoding a batch of `bytes`: whether it may be
    /// encoded now. A reservation (`reserved`) always may, and is used up.
    mutating func takeRoom(_ bytes: Int, reserved: Bool, maximum: Int) -> Bool {
        if reserved {
            reservedBytes -= bytes
            return true
        }
        return admits(bytes, maximum: maximum)
    }
}
