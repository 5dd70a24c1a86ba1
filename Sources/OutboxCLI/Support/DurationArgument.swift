import ArgumentParser

/// Durations on the command line: a decimal number with an optional unit,
/// `500ms`, `90s`, `15m`, `24h`, `7d`; a plain number is in the option's
/// plain unit (seconds unless the option says otherwise).
///
/// Every duration option parses through here (`@Option(transform:
/// DurationArgument.parse)`), so the checks happen before any conversion:
/// NaN, infinities, negative values and anything over ``maximum`` (100
/// years) are refused as a usage error (exit 64), never converted;
/// ArgumentParser's message names the option and the value before the
/// reason thrown here. The result is counted in whole milliseconds (a
/// fraction of one is dropped, but a positive value is at least 1 ms).
enum DurationArgument {
    /// A unit a duration may be written in.
    enum Unit: CaseIterable, Sendable {
        case milliseconds, seconds, minutes, hours, days

        /// Its suffix on the command line.
        var suffix: String {
            switch self {
            case .milliseconds: "ms"
            case .seconds: "s"
            case .minutes: "m"
            case .hours: "h"
            case .days: "d"
            }
        }

        /// How many milliseconds one of it is.
        var milliseconds: Int64 {
            switch self {
            case .milliseconds: 1
            case .seconds: 1_000
            case .minutes: 60_000
            case .hours: 3_600_000
            case .days: 86_400_000
            }
        }

        var name: String { "\(self)" }
    }

    /// The longest duration accepted: 100 years of 365 days. Longer is
    /// never meant, and every clock and timer the tool feeds takes it.
    static let maximum: Duration = .milliseconds(maximumMilliseconds)
    static let maximumMilliseconds: Int64 = 100 * 365 * 86_400_000
    static let maximumText = "100 years (36500d)"

    /// The forms accepted, for messages and help.
    static let forms = "500ms, 90s, 15m, 24h or 7d"

    /// Parses a duration whose plain numbers are seconds.
    static func parse(_ text: String) throws(ValidationError) -> Duration {
        try parse(text, plainUnit: .seconds)
    }

    /// Parses a duration whose plain numbers are in `plainUnit`.
    static func parse(_ text: String, plainUnit: Unit) throws(ValidationError) -> Duration {
        // "ms" before "m" and "s": the longest suffix that matches.
        let unit = Unit.allCases.sorted { $0.suffix.count > $1.suffix.count }.first { text.hasSuffix($0.suffix) }
        let number = unit.map { String(text.dropLast($0.suffix.count)) } ?? text
        guard let value = Double(number), !number.isEmpty else {
            throw ValidationError("not a duration: use a number with a unit, \(forms) (a plain number is \(plainUnit.name))")
        }
        guard value.isFinite else { throw ValidationError("not a finite duration") }
        guard value >= 0 else { throw ValidationError("negative: a duration is 0 or more") }
        // value ≤ maximum in its unit, checked in Double before any
        // conversion: the product below then fits Int64 exactly.
        let scale = Double((unit ?? plainUnit).milliseconds)
        // A positive value below 1 ms counts as 1 ms: 0 often means "never"
        // or "forever", which a tiny positive value must not become.
        let milliseconds = value > 0 ? max(1, (value * scale).rounded(.towardZero)) : 0
        guard milliseconds <= Double(maximumMilliseconds), let whole = Int64(exactly: milliseconds) else {
            throw ValidationError("longer than \(maximumText), the longest duration accepted")
        }
        return .milliseconds(whole)
    }

    /// `duration` as the command line writes it, in the largest unit that
    /// divides it (`24h`, `90s`, `1500ms`), for messages and defaults.
    static func text(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000)
        guard !overflow else { return "\(duration)" }
        let milliseconds = product + attoseconds / 1_000_000_000_000_000
        for unit in Unit.allCases.reversed() where milliseconds % unit.milliseconds == 0 && milliseconds != 0 {
            return "\(milliseconds / unit.milliseconds)\(unit.suffix)"
        }
        return milliseconds == 0 ? "0s" : "\(milliseconds)ms"
    }
}
