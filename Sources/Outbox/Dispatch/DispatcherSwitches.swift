import Foundation
import OutboxLocking

/// The dispatcher's switches — paused, online, its lifecycle, the claim
/// deadline of a `drain(until:)` — kept once, here: the actor reads and sets
/// them through its properties, and the drain loop and the delivery workers,
/// which run off the actor, read them without a hop onto it.
final class DispatcherSwitches: Sendable {
    enum Lifecycle: Sendable {
        /// Never started: every enqueue flushes in the background.
        case idle
        case started
        /// After `stop()`: enqueues are recorded and sent after the next `start(connectivity:)`.
        case stopped
    }

    struct Values: Sendable {
        var paused = false
        var online = true
        var lifecycle = Lifecycle.idle
        /// While `drain(until:)` runs: no attempt starts after this.
        var claimDeadline: Date?

        /// Attempts may be sent at all: not paused, online, not stopped.
        var maySend: Bool { !paused && online && lifecycle != .stopped }
    }

    private let values = Locked(Values())

    /// All the switches, read together.
    var current: Values { values.withLock { $0 } }

    func update(_ change: (inout Values) -> Void) { values.withLock { change(&$0) } }

    /// Whether an attempt may start now: sending is allowed, and a
    /// `drain(until:)` deadline, if any, has not passed.
    func mayClaim(_ clock: any OutboxClock) -> Bool {
        let values = current
        return values.maySend && values.claimDeadline.map { clock.now() < $0 } ?? true
    }
}
