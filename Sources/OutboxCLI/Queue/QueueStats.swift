import ArgumentParser
import OutboxQueue

/// `outbox queue stats DIR [--json]`
struct QueueStats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Print what the queue holds and where each consumer's commit is."
    )

    @OptionGroup var queue: QueueDirectoryOptions

    @Flag(help: "Print the statistics as one JSON object.")
    var json = false

    struct Report: Encodable {
        struct Consumer: Encodable {
            var name: String
            var committed: UInt64?
        }

        var elements: Int
        var oldest: UInt64?
        var newest: UInt64?
        var bytes: Int64
        var segments: Int
        var consumers: [Consumer]
    }

    func run() async throws {
        let statistics = try await queue.withQueue { queue in try await queue.statistics() }
        let report = Report(
            elements: statistics.elements, oldest: statistics.oldest?.rawValue, newest: statistics.newest?.rawValue,
            bytes: statistics.bytes, segments: statistics.segments,
            consumers: statistics.consumers.map { .init(name: $0.name, committed: $0.committed?.rawValue) })
        try StandardStreams.writeReport(json: json, report, text: Self.text(report))
    }

    static func text(_ report: Report) -> String {
        var lines = [
            "elements: \(report.elements)",
            "positions: " + (report.oldest.map { "\($0) to \(report.newest ?? $0)" } ?? "none"),
            "bytes: \(report.bytes) in \(report.segments) segment(s)",
        ]
        for consumer in report.consumers {
            lines.append("consumer \(consumer.name): committed \(consumer.committed.map(String.init) ?? "nothing")")
        }
        return lines.joined(separator: "\n")
    }
}
