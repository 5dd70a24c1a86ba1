/// Room under ``OutboxLog/Configuration/maximumPendingBytes`` held for one
/// later ``OutboxLog/submit(_:using:)``: for a caller that submits under its
/// own lock, after changing its own state, where a refusal would leave the
/// two apart. Reserve before taking the lock (it may wait), submit under it.
///
/// The first submit that uses it takes it, whatever its outcome; room that
/// batch did not fill, or a reservation never used, goes back to the log
/// (the latter when the reservation is released).
package final class LogRoomReservation: @unchecked Sendable {
    /// The bytes reserved.
    package let bytes: Int
    private let core: LogCore
    /// Guarded by the log's own lock (`core.state`), which every submit
    /// takes anyway: no lock of its own to allocate per change.
    private var unused = true

    init(core: LogCore, bytes: Int) {
        self.core = core
        self.bytes = bytes
    }

    /// Under the log's lock: takes the reservation for a submit to `core`;
    /// false if it is for another log or was taken already.
    func take(for core: LogCore, _ state: inout LogState) -> Bool {
        guard core === self.core else { return false }
        defer { unused = false }
        return unused
    }

    deinit {
        let core = self.core
        let bytes = self.bytes
        let unused = core.state.withLock { _ in self.unused }
        if unused { core.releaseRoom(bytes) }
    }
}
