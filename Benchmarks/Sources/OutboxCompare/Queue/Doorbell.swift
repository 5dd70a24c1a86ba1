import Foundation

/// Wakes the peers' consumer threads after every append: none of the peer
/// queues can wait for an element (Tape's file, a SQLite table, RocksDB
/// keys), so the harness gives them what an app in one process would build,
/// and they never poll. A consumer notes the generation before it takes; if
/// the take found nothing it waits for a later one, so an append between
/// its take and its wait is never missed.
final class Doorbell: @unchecked Sendable {
    // @unchecked: `generation` and `stopped` are read and written only with
    // `condition` locked.
    private let condition = NSCondition()
    private var generationValue: UInt64 = 0
    private var stopped = false

    var generation: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return generationValue
    }

    func ring() {
        condition.lock()
        generationValue &+= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Wakes every wait, now and later, for good.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until a ring after `generation`; `false` once stopped.
    func wait(after generation: UInt64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while generationValue == generation && !stopped { condition.wait() }
        return !stopped
    }
}
