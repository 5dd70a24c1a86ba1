import OutboxLogTesting
import Testing

@testable import OutboxTorture

/// A simulated torture cycle is a function of its seed and number: every run
/// makes the same file-system calls in the same order (the engine's threads
/// take turns, see `OperationRunner.runSettled`), so a violation replays
/// from the command it prints, fault and all.
@Suite("Torture schedules replay")
struct ScheduleReplayTests {
    /// Cycle 880 of that seed is the violation a 10-minute run of the old
    /// engine reported and its printed command could not replay.
    @Test(
        "an iofault cycle makes the same calls in the same order on every run",
        arguments: [8_734_784_727_225_801_972 as UInt64, 77])
    func ioFaultCyclesReplay(seed: UInt64) async {
        for cycle in seed == 77 ? [5, 6, 7] : [0, 1, 880] {
            var first = TortureReport(seed: seed)
            var second = TortureReport(seed: seed)
            let a = await IOFaultTorture.cycle(seed: seed, cycle: cycle, report: &first)
            let b = await IOFaultTorture.cycle(seed: seed, cycle: cycle, report: &second)
            let (schedules, calls) = ((a.faults.scheduleFingerprint, b.faults.scheduleFingerprint), (a.faults.callCounts, b.faults.callCounts))
            #expect(schedules.0 == schedules.1, "iofault seed \(seed) cycle \(cycle): \(calls.0) then \(calls.1)")
            #expect(first == second, "iofault seed \(seed) cycle \(cycle)")
            #expect(first.violations.isEmpty, "\(first.violations)")
        }
    }

    @Test("a power-loss cycle makes the same calls in the same order on every run")
    func powerLossCyclesReplay() async {
        for cycle in 0..<3 {
            var first = TortureReport(seed: 78)
            var second = TortureReport(seed: 78)
            let a = await PowerLossTorture.cycle(seed: 78, cycle: cycle, report: &first)
            let b = await PowerLossTorture.cycle(seed: 78, cycle: cycle, report: &second)
            let (schedules, calls) = ((a.faults.scheduleFingerprint, b.faults.scheduleFingerprint), (a.faults.callCounts, b.faults.callCounts))
            #expect(schedules.0 == schedules.1, "powerloss cycle \(cycle): \(calls.0) then \(calls.1)")
            #expect(first == second, "powerloss cycle \(cycle)")
            #expect(first.violations.isEmpty, "\(first.violations)")
        }
    }
}
