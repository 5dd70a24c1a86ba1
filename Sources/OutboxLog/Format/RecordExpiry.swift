import Foundation

/// A record's expiry as the format stores it: whole milliseconds since
/// 1970-01-01 UTC, signed 64 bits (Docs/FORMAT.md, "Record frame").
///
/// A `Date` is rounded *up* to its millisecond, so retention never removes
/// a record before the time its writer gave; ``date(_:)`` gives back a
/// `Date` that rounds to the same millisecond, so a record read and written
/// again keeps its expiry.
package enum RecordExpiry {
    /// The largest magnitude accepted from a `Date`, in milliseconds (10^15,
    /// about 31,700 years either side of 1970; `Date.distantFuture` is
    /// inside): every millisecond in it has a `Date` of its own, so what is
    /// written reads back exactly, and it is far inside `Int64`.
    static let limit: Double = 1e15

    /// `date` rounded up to the millisecond, or `nil` if it has none the
    /// format can hold (not finite, or beyond ``limit``).
    package static func milliseconds(_ date: Date) -> Int64? {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.up)
        guard milliseconds.isFinite, abs(milliseconds) < limit else { return nil }
        return Int64(milliseconds)
    }

    /// A `Date` that ``milliseconds(_:)`` takes back to `milliseconds`.
    /// The nearest `Date` to `milliseconds / 1000` is not always one (`Date`
    /// counts from 2001 in a `Double`, and rounding up can land a
    /// millisecond later): a few steps of its smallest unit find one. Any
    /// 64-bit value converts; beyond ``limit`` (only a crafted file holds
    /// one) the nearest `Date` is kept.
    package static func date(_ milliseconds: Int64) -> Date {
        var date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        for _ in 0..<16 {
            guard let stored = Self.milliseconds(date), stored > milliseconds else { break }
            date = Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.nextDown)
        }
        for _ in 0..<16 {
            guard let stored = Self.milliseconds(date), stored < milliseconds else { break }
            date = Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.nextUp)
        }
        return date
    }

    /// The latest stored expiry that has passed at `now`: the largest
    /// millisecond whose ``date(_:)`` is at or before it (rounded *down*,
    /// where an expiry is rounded up, so no record goes before its time).
    /// Past either end of what can be stored, every expiry has passed, or
    /// none has.
    package static func passed(at now: Date) -> Int64 {
        let seconds = now.timeIntervalSince1970
        guard !seconds.isNaN else { return .min }
        let floor = (seconds * 1000).rounded(.down)
        guard floor < limit else { return .max }
        guard floor > -limit else { return .min }
        var milliseconds = Int64(floor)
        for _ in 0..<16 where date(milliseconds) > now { milliseconds -= 1 }
        for _ in 0..<16 where date(milliseconds + 1) <= now { milliseconds += 1 }
        return milliseconds
    }
}
