import OutboxLogTesting

/// How a simulated cycle names the order of its file-system calls: a
/// replay (`--first-cycle N --cycles 1`) prints the same text when it made
/// the same calls in the same order, so a reported violation and its replay
/// can be compared.
enum ScheduleFingerprint {
    static func text(_ disk: SimulatedFileSystem) -> String {
        let calls = disk.faults.callCounts.values.reduce(0, +)
        return "schedule \(String(disk.faults.scheduleFingerprint, radix: 16)) after \(calls) calls"
    }
}
