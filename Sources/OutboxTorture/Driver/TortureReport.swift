import Foundation

/// What a torture run did, mode by mode, and every violation it found, each
/// with what reproduces it.
public struct TortureReport: Sendable, Codable, Hashable {
    /// Counts for one mode.
    public struct ModeCounts: Sendable, Codable, Hashable {
        /// Crash (or damage) and recovery cycles completed.
        public var cycles = 0
        /// Operations whose call returned successfully (acknowledgements).
        public var acknowledged = 0
        /// Faults injected: kills, power losses, I/O errors, corruptions.
        public var faults = 0
        /// Records (or entries) read back and checked after recovery.
        public var recovered = 0
        /// Violations of the engine's promise found.
        public var violations = 0
        /// Mode-specific tallies ("killed during compaction", "strict opens
        /// refused", "libfiu faults", …), for the reader and the docs.
        public var details: [String: Int] = [:]

        public init() {}
    }

    /// One broken promise.
    public struct Violation: Sendable, Codable, Hashable, CustomStringConvertible {
        public var mode: TortureMode
        public var seed: UInt64
        public var cycle: Int
        public var detail: String
        /// The command that replays the failing cycle (as far as a mode whose
        /// inputs include real timing can be replayed).
        public var reproduce: String

        public var description: String { "\(mode) seed \(seed) cycle \(cycle): \(detail) — reproduce: \(reproduce)" }
    }

    public var seed: UInt64
    public var modes: [TortureMode: ModeCounts] = [:]
    public var violations: [Violation] = []
    /// Things that could not be run here, and why (e.g. `fiu-run` missing).
    public var notes: [String] = []
    public var seconds = 0.0

    public init(seed: UInt64) { self.seed = seed }

    /// The counts of `mode` (zero if it did not run).
    public subscript(mode: TortureMode) -> ModeCounts { modes[mode] ?? ModeCounts() }

    public var totalViolations: Int { violations.count }

    mutating func count(_ mode: TortureMode, _ update: (inout ModeCounts) -> Void) {
        update(&modes[mode, default: ModeCounts()])
    }

    mutating func detail(_ mode: TortureMode, _ name: String, _ amount: Int = 1) {
        count(mode) { $0.details[name, default: 0] += amount }
    }

    mutating func violation(_ mode: TortureMode, seed: UInt64, cycle: Int, _ detail: String, reproduce custom: String? = nil) {
        let reproduce: String
        switch mode {
        case _ where custom != nil:
            reproduce = custom!
        case .powerloss, .iofault, .corrupt, .lock, .spool:
            reproduce = "outbox torture --mode \(mode) --seed \(seed) --first-cycle \(cycle) --cycles 1"
        case .kill, .outbox, .outboxfault, .payload, .queue:
            // Kill moments depend on real timing: the seed replays the same
            // workloads and kill plans, not the same instants.
            reproduce = "outbox torture --mode \(mode) --seed \(seed) --cycles \(cycle + 1)"
        }
        violations.append(Violation(mode: mode, seed: seed, cycle: cycle, detail: detail, reproduce: reproduce))
        count(mode) { $0.violations += 1 }
    }

    /// The human-readable report.
    public var text: String {
        var lines = ["torture seed \(seed), \(String(format: "%.1f", seconds)) s"]
        let header = ["mode", "cycles", "acked ops", "faults", "recovered", "violations"]
        var rows: [[String]] = []
        for mode in TortureMode.allCases {
            guard let counts = modes[mode] else { continue }
            rows.append([
                mode.rawValue, "\(counts.cycles)", "\(counts.acknowledged)", "\(counts.faults)", "\(counts.recovered)",
                "\(counts.violations)",
            ])
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max()! }
        func format(_ row: [String]) -> String {
            row.indices.map { column in
                column == 0
                    ? row[column].padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - row[column].count) + row[column]
            }.joined(separator: "  ")
        }
        lines.append("  " + format(header))
        for row in rows { lines.append("  " + format(row)) }
        for mode in TortureMode.allCases {
            guard let details = modes[mode]?.details, !details.isEmpty else { continue }
            lines.append(
                "  \(mode): " + details.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        for note in notes { lines.append("  note: \(note)") }
        for violation in violations.prefix(20) { lines.append("VIOLATION \(violation)") }
        if violations.count > 20 { lines.append("… and \(violations.count - 20) more violation(s)") }
        lines.append(
            violations.isEmpty
                ? "violations: 0"
                : "violations: \(violations.count) — rerun with --seed \(seed)")
        return lines.joined(separator: "\n")
    }
}
