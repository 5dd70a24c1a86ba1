import ArgumentParser
import OutboxLog

/// `outbox log compact DIR [--json]`
struct LogCompact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Rewrite the log without its superseded records and tombstones.",
        discussion: """
            Opens the log for writing (it must not be open elsewhere), seals the active \
            segment, compacts every sealed segment from the first one with dead records on, \
            and prints what was done.
            """
    )

    @OptionGroup var options: LogDirectoryOptions

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    func run() async throws {
        let report = try await options.withLog(.readWrite(create: false)) { log in try await log.compact() }
        try StandardStreams.writeReport(json: json, CompactionReportJSON(report), text: "\(report) in \(report.duration.readable)")
    }
}

/// ``CompactionReport`` as JSON, the duration in seconds.
struct CompactionReportJSON: Encodable {
    var inputSegments: Int
    var outputSegments: Int
    var bytesBefore: Int64
    var bytesAfter: Int64
    var recordsCopied: Int
    var durationSeconds: Double

    init(_ report: CompactionReport) {
        inputSegments = report.inputSegments
        outputSegments = report.outputSegments
        bytesBefore = report.bytesBefore
        bytesAfter = report.bytesAfter
        recordsCopied = report.recordsCopied
        durationSeconds = report.duration.seconds
    }
}
