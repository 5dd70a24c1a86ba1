import ArgumentParser
import OutboxLog

/// `outbox log stats DIR [--json]`
struct LogStats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Print a log's size and progress, without changing anything.",
        discussion: """
            The dead ratio is dead bytes over total bytes: the share compaction would reclaim. \
            With --json, every LogStatistics field plus "deadRatio" and "directory"; \
            syncs, compactions and pendingBytes count since this read-only open, so they are 0.
            """
    )

    @OptionGroup var options: LogDirectoryOptions

    @Flag(help: "Print the statistics as one JSON object.")
    var json = false

    func run() async throws {
        let statistics = try await options.withLog(.readOnly(salvage: false)) { log in
            options.warnIfDamaged(log.recoveryReport)
            return log.statistics
        }
        let output = StatisticsJSON(statistics, directory: options.directory)
        if json {
            StandardStreams.writeLine(try JSONLines().encode(output))
        } else {
            StandardStreams.write(
                """
                directory         \(output.directory)
                segments          \(output.segments)
                total bytes       \(output.totalBytes)
                live bytes        \(output.liveBytes)
                dead bytes        \(output.deadBytes) (dead ratio \(String(format: "%.3f", output.deadRatio)))
                live keys         \(output.liveKeys)
                next sequence     \(output.nextSequence)
                durable sequence  \(output.durableSequence)

                """)
        }
    }
}

/// ``LogStatistics`` as JSON, with the dead ratio.
struct StatisticsJSON: Encodable {
    var directory: String
    var segments: Int
    var totalBytes: Int64
    var liveBytes: Int64
    var deadBytes: Int64
    var deadRatio: Double
    var liveKeys: Int
    var nextSequence: UInt64
    var writtenSequence: UInt64
    var durableSequence: UInt64
    var pendingBytes: Int
    var syncs: Int
    var compactions: Int

    init(_ statistics: LogStatistics, directory: String) {
        self.directory = directory
        segments = statistics.segments
        totalBytes = statistics.totalBytes
        liveBytes = statistics.liveBytes
        deadBytes = statistics.deadBytes
        deadRatio = statistics.totalBytes > 0 ? Double(statistics.deadBytes) / Double(statistics.totalBytes) : 0
        liveKeys = statistics.liveKeys
        nextSequence = statistics.nextSequence
        writtenSequence = statistics.writtenSequence
        durableSequence = statistics.durableSequence
        pendingBytes = statistics.pendingBytes
        syncs = statistics.syncs
        compactions = statistics.compactions
    }
}
