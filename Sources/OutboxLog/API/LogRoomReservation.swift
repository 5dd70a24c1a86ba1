import OutboxLocking

/// Room under ``OutboxLog/Configuration/maximumPendingBytes`` held for one
/// later ``OutboxLog/submit(_:using:)``: for a caller that submits under its
/// own lock, after changing its own state, where a refusal would leave the
/// two apart. Reserve before taking the lock (it may wait), submit under it.
///
/// The first submit that uses it takes it, whatever its outcome; room that
/// batch did not fill, or a reservation never used, goes back to the log
/// (the latter when the reservation is released).
package final class LogRoomReservation: Sendable {
    /// The bytes reserved.
    package let bytes: Int
    private let core: LogCore
    private let unused = Locked(true)

    init(core: LogCore, bytes: Int) {
        self.core = core
        self.bytes = bytes
    }

    /// Takes the reservation for a submit to `core`: false if it is for
    /// another log or was taken already.
    func take(for core: LogCore) -> Bool {
        guard core === self.core else { return false }
        return unused.withLock { unused in
            defer { unused = false }
            return unused
        }
    }

    deinit {
        if unused.withLock({ $0 }) { core.releaseRoom(bytes) }
    }
}
