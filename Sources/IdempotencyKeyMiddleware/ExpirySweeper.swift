import Foundation
import OutboxLocking

/// Decides when the middleware asks its store to forget expired keys: at
/// most once per interval of the middleware's clock, by the first request
/// that finds the interval over.
final class ExpirySweeper: Sendable {
    private let lastSweep = Locked<Date?>(nil)

    /// Whether a sweep is due at `now`; if so, the caller owns it (no other
    /// request gets `true` until `interval` has passed again). A clock that
    /// went backwards makes a sweep due.
    func claim(now: Date, interval: Duration) -> Bool {
        lastSweep.withLock { last in
            if let last, now >= last, now.timeIntervalSince(last) < interval.seconds { return false }
            last = now
            return true
        }
    }
}
