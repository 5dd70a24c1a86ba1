import Foundation
import SystemPackage

/// The crash-recovery torture suite: runs the chosen modes against the
/// engine (and, in the outbox mode, the whole outbox) and returns what they
/// found.
///
/// ```swift
/// var options = TortureOptions(seed: 42, modes: [.powerloss, .corrupt], cycles: 100, directory: "/tmp/torture")
/// let report = await Torture.run(options)
/// precondition(report.violations.isEmpty, report.text)
/// ```
///
/// Every cycle draws its inputs from the seed and its number, so the same
/// seed replays the same workloads, faults and damage (the instants of the
/// kill modes also depend on real timing). See Docs/RELIABILITY.md.
public enum Torture {
    public static func run(_ options: TortureOptions) async -> TortureReport {
        precondition(options.seconds != nil || options.cycles != nil, "a torture run needs --seconds or --cycles")
        var report = TortureReport(seed: options.seed)
        let clock = ContinuousClock()
        let started = clock.now
        let shares = options.modes.reduce(0) { $0 + $1.shareOfAll }
        var deadline = started
        options.progress("torture seed \(options.seed): \(options.modes.map(\.rawValue).joined(separator: ", "))")
        for mode in options.modes {
            // Each mode gets its share of the time, plus whatever the modes
            // before it left unused.
            deadline = max(deadline, clock.now) + .seconds((options.seconds ?? 0) * mode.shareOfAll / shares)
            let budget = Budget(
                first: options.firstCycle, cycles: options.cycles, deadline: options.seconds == nil ? nil : deadline)
            let modeStarted = clock.now
            switch mode {
            case .kill: await KillTorture.run(options: options, budget: budget, report: &report)
            case .powerloss: await PowerLossTorture.run(options: options, budget: budget, report: &report)
            case .iofault: await IOFaultTorture.run(options: options, budget: budget, report: &report)
            case .corrupt: await CorruptTorture.run(options: options, budget: budget, report: &report)
            case .outbox: await OutboxModeTorture.run(options: options, budget: budget, report: &report)
            case .outboxfault: await OutboxFaultTorture.run(options: options, budget: budget, report: &report)
            case .lock: await LockTorture.run(options: options, budget: budget, report: &report)
            case .spool: await SpoolTorture.run(options: options, budget: budget, report: &report)
            case .payload: await PayloadTorture.run(options: options, budget: budget, report: &report)
            case .queue: await QueueTorture.run(options: options, budget: budget, report: &report)
            }
            let counts = report[mode]
            options.progress(
                "\(mode): \(counts.cycles) cycles in \(String(format: "%.1f", (clock.now - modeStarted).seconds)) s, "
                    + "\(counts.acknowledged) acknowledged, \(counts.faults) faults, \(counts.violations) violations")
        }
        report.seconds = (clock.now - started).seconds
        return report
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
