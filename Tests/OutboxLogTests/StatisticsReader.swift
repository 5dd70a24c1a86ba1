import Foundation
import OutboxLocking
import OutboxLog

/// Reads a log's statistics back to back on a thread of its own until told
/// to stop: a caller that shares nothing with the writer thread but what
/// `statistics` itself synchronizes.
///
/// Between its start and `stop()` the reading thread takes no lock the
/// engine or the test takes (its own `control` is touched by the test only
/// before the run and at the end), so under ThreadSanitizer a read of the
/// writer's state that skips the engine's lock is a reported race however
/// the threads are scheduled — not only when a read happens to land
/// between two of the writer's lock operations.
final class StatisticsReader: Sendable {
    /// What the reading thread saw.
    struct Readings: Sendable {
        var count = 0
        var last: LogStatistics?
        /// Readings whose written sequence was below the one before.
        var backwards: [(before: UInt64, after: UInt64)] = []
        /// Readings that said more was written than was ever numbered.
        var beyondNext: [LogStatistics] = []

        mutating func record(_ statistics: LogStatistics) {
            if let last, statistics.writtenSequence < last.writtenSequence {
                backwards.append((last.writtenSequence, statistics.writtenSequence))
            }
            if statistics.writtenSequence >= statistics.nextSequence { beyondNext.append(statistics) }
            last = statistics
            count += 1
        }
    }

    private struct Control {
        var reading = false
        var stop = false
        var result: Readings?
    }

    private let control = Locked(Control())

    /// Starts the thread and returns once it has read the statistics once.
    static func start(_ log: OutboxLog) async -> StatisticsReader {
        let reader = StatisticsReader()
        Thread { [reader] in reader.run(log) }.start()
        while !reader.control.withLock({ $0.reading }) { await Task.yield() }
        return reader
    }

    /// Stops the thread and returns what it saw.
    func stop() async -> Readings {
        control.withLock { $0.stop = true }
        while true {
            if let result = control.withLock({ $0.result }) { return result }
            await Task.yield()
        }
    }

    private func run(_ log: OutboxLog) {
        var readings = Readings()
        readings.record(log.statistics)
        control.withLock { $0.reading = true }
        while !control.withLock({ $0.stop }) { readings.record(log.statistics) }
        control.withLock { $0.result = readings }
    }
}
