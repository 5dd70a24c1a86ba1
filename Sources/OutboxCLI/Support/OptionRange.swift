import ArgumentParser

/// Range checks for numeric options, made in a command's `validate()`,
/// before the value is converted or multiplied anywhere: a value outside
/// the range is a usage error (exit 64) naming the option, the value and
/// the range, so no number typed on the command line can trap later.
///
/// ArgumentParser itself refuses what is not a number of the option's type
/// (`abc`, `1e300` for an integer, a value past `Int.max`); these checks
/// add the bounds that make the accepted values meaningful and safe.
enum OptionRange {
    /// The most entries or records one command builds in memory at once.
    static let maximumCount = 1_000_000
    /// The most payload bytes one command holds in memory at once.
    static let maximumBatchBytes = 1 << 30

    /// Requires `value` in `range` (NaN is in no range).
    static func require<Value: Comparable>(_ value: Value, in range: ClosedRange<Value>, _ option: String) throws(ValidationError) {
        guard range.contains(value) else {
            throw ValidationError("\(option) must be in \(range.lowerBound)...\(range.upperBound), not \(value)")
        }
    }

    /// Requires `value`, if given, in `range`.
    static func require<Value: Comparable>(_ value: Value?, in range: ClosedRange<Value>, _ option: String) throws(ValidationError) {
        if let value { try require(value, in: range, option) }
    }

    /// Requires a duration more than zero (when `positive`) and no longer
    /// than `maximum` (``DurationArgument`` already refused anything over
    /// 100 years or below zero).
    static func require(
        _ value: Duration, _ option: String, positive: Bool, maximum: Duration = DurationArgument.maximum
    ) throws(ValidationError) {
        guard positive ? value > .zero : value >= .zero, value <= maximum else {
            let lower = positive ? "more than 0" : "0 or more"
            throw ValidationError(
                "\(option) must be \(lower) and at most \(DurationArgument.text(maximum)), not \(DurationArgument.text(value))")
        }
    }

    /// Requires `count` items of `size` bytes each to fit in
    /// ``maximumBatchBytes`` (both already checked non-negative).
    static func requireInMemory(count: Int, size: Int, _ what: String) throws(ValidationError) {
        let (total, overflow) = count.multipliedReportingOverflow(by: size)
        guard !overflow, total <= maximumBatchBytes else {
            throw ValidationError("\(what) add up to more than 1 GiB (\(count) × \(size) bytes): use a smaller count or size")
        }
    }
}
