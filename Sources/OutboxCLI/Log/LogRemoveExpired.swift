import ArgumentParser
import Foundation
import OutboxLog

/// `outbox log remove-expired DIR [--now-ms N] [--json]`
struct LogRemoveExpired: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove-expired",
        abstract: "Remove the oldest segments whose every record has expired (time-based retention).",
        discussion: """
            Opens the log for writing (it must not be open elsewhere) and removes, oldest \
            first, the sealed segments whose every value and annotation carries an expiry \
            at or before now (or --now-ms); a record without an expiry keeps its segment and \
            every later one. Prints what was removed.
            """
    )

    @OptionGroup var options: LogDirectoryOptions

    @Option(help: "The time to expire against, in milliseconds since 1970 (default: now).")
    var nowMs: Int64?

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    func run() async throws {
        // The date at which exactly the expiries up to this millisecond have passed.
        let now = nowMs.map(RecordExpiry.date) ?? Date()
        let report = try await options.withLog(.readWrite(create: false)) { log in try await log.removeExpired(now: now) }
        try StandardStreams.writeReport(json: json, RetentionReportJSON(report), text: "\(report)")
    }
}

/// ``RetentionReport`` as JSON.
struct RetentionReportJSON: Encodable {
    var segmentsRemoved: Int
    var bytesRemoved: Int64
    var keysRemoved: Int

    init(_ report: RetentionReport) {
        segmentsRemoved = report.segmentsRemoved
        bytesRemoved = report.bytesRemoved
        keysRemoved = report.keysRemoved
    }
}
