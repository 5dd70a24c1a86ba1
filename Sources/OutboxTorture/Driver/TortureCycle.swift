/// A broken promise found by one step of a cycle: the step throws it, the
/// cycle's driver records it with the mode, seed and cycle.
struct CycleViolation: Error {
    var detail: String

    init(_ detail: String) { self.detail = detail }
}

/// The shared cycle driver: runs a cycle's steps, in order, and records the
/// first violation a step throws in the report with the seed and cycle that
/// replay it, so every mode reports its violations the same way.
struct TortureCycle {
    let mode: TortureMode
    let seed: UInt64
    let number: Int
    /// Rewrites a violation's detail before it is recorded (a mode may add
    /// what it knows then, e.g. the simulated disk's schedule).
    var annotate: (String) -> String = { $0 }
    /// The command that replays the cycle, when the mode's default does not.
    var reproduce: String? = nil

    init(_ mode: TortureMode, seed: UInt64, cycle: Int) {
        self.mode = mode
        self.seed = seed
        self.number = cycle
    }

    /// Runs `steps`; returns `false` after a violation, which is recorded.
    func run(
        report: inout TortureReport, _ steps: (inout TortureReport) async throws(CycleViolation) -> Void
    ) async -> Bool {
        do {
            try await steps(&report)
            return true
        } catch {
            record(error, in: &report)
            return false
        }
    }

    /// Records `violation` with this cycle's seed and number.
    func record(_ violation: CycleViolation, in report: inout TortureReport) {
        report.violation(mode, seed: seed, cycle: number, annotate(violation.detail), reproduce: reproduce)
    }
}
