import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// I/O errors through the simulated file system.
///
/// Each cycle fails one kind of system call (EIO or ENOSPC on the Nth
/// write, sync, rename, directory sync, file creation or removal; once or
/// from then on) under a running workload, then checks that:
/// - after a failed append, the log is poisoned: appends, syncs and reads
///   throw `.poisoned` (a failed sync is never retried: fsyncgate);
/// - after a failed compaction that did not poison it, the log still holds
///   exactly what was acknowledged;
/// - nothing was acknowledged that had not reached the disk: after an app
///   kill every `written` acknowledgement survives, after a power loss
///   every `durable` one (the simulated disk drops what a failed sync did
///   not flush, as Linux does);
/// and, in half the cycles, fails a call of the *recovery* too (truncate,
/// sync, rename, removal, read…): that open must fail with `.io` (an I/O
/// error is never reported as corruption) or succeed with the right state,
/// and a later open without faults must recover everything acknowledged.
enum IOFaultTorture {
    static let directory: FilePath = "/torture/log"

    /// One cycle in this many runs the real binary under libfiu instead.
    static let libfiuEvery = 8

    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        var libfiu = prepareLibfiu(options: options, report: &report)
        for cycle in budget.cycles {
            if cycle % libfiuEvery == libfiuEvery - 1, libfiu != nil {
                if await !libfiu!.cycle(seed: options.seed, cycleNumber: cycle, report: &report) { libfiu = nil }
                continue
            }
            let before = report[.iofault].violations
            let disk = await self.cycle(seed: options.seed, cycle: cycle, report: &report)
            if options.cycles.map({ $0 <= 10 }) == true {
                options.progress("iofault: cycle \(cycle): \(ScheduleFingerprint.text(disk))")
            }
            if report[.iofault].violations > before {
                let kept = await DiskImage.save(disk, to: options.directory.appending("iofault-cycle-\(cycle)"))
                report.notes.append("iofault: the simulated disk of cycle \(cycle) is kept in \(kept)")
            }
            if cycle % 100 == 0 {
                let counts = report[.iofault]
                options.progress("iofault: cycle \(cycle), \(counts.faults) faults, \(counts.violations) violations")
            }
        }
    }

    /// The libfiu runs, if `fiu-run` and the worker binary are at hand.
    static func prepareLibfiu(options: TortureOptions, report: inout TortureReport) -> LibfiuTorture? {
        guard options.libfiu else { return nil }
        guard let executable = options.workerExecutable else {
            report.notes.append("iofault: libfiu runs skipped: no worker executable (the `outbox` binary) was given")
            return nil
        }
        guard let fiuRun = LibfiuTorture.fiuRun else {
            report.notes.append("iofault: libfiu runs skipped: fiu-run not found (apt-get install fiu-utils)")
            return nil
        }
        return LibfiuTorture(executable: executable, fiuRun: fiuRun, root: options.directory.appending("libfiu"))
    }
}
