import ArgumentParser
import OutboxLog

/// `outbox log verify DIR [--json]`
struct LogVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every record of a log without changing anything.",
        discussion: """
            Opens the log read-only in salvage mode, so every damaged range is reported \
            and nothing is repaired, and prints the recovery report. \
            Exit status: 0 clean, 1 damage found, 2 the log could not be opened. With --json, \
            a log that cannot be opened prints {"directory", "error": {"code", "file", "offset", \
            "message"}} as well as the error line on standard error.
            """
    )

    @OptionGroup var options: LogDirectoryOptions

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    func run() async throws {
        let report: RecoveryReport
        do {
            report = try await options.withLog(.readOnly(salvage: true)) { log in log.recoveryReport }
        } catch {
            if json, let cause = error.openingError {
                StandardStreams.writeLine(try JSONLines().encode(OpenFailureJSON(directory: options.directory, error: cause)))
            }
            throw error
        }
        try StandardStreams.writeReport(
            json: json, RecoveryReportJSON(report), text: "\(report.description)\nchecked in \(report.duration.readable)")
        if !report.isClean { throw ExitCode(CommandFailure.damageFound.rawValue) }
    }
}

/// ``RecoveryReport`` as JSON: every field, absent ones as `null`, the
/// duration in seconds.
struct RecoveryReportJSON: Encodable {
    let report: RecoveryReport

    init(_ report: RecoveryReport) { self.report = report }

    private enum Keys: String, CodingKey {
        case directory, segments, records, liveKeys, bytes, nextSequence, truncatedTail, skipped
        case setAsideFiles, interruptedCompaction, removedTemporaryFiles, readOnly, durationSeconds, clean
    }

    /// `damage` is the cause's name (``LogDamage/name``), `reason` it in words.
    private struct Tail: Encodable {
        var file: String
        var offset: Int64
        var bytes: Int64
        var damage: String
        var reason: String
        var unreachableRecords: Int
    }

    private struct Range: Encodable {
        var file: String
        var offset: Int64
        var bytes: Int64
        var damage: String
        var reason: String
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(report.directory, forKey: .directory)
        try container.encode(report.segments, forKey: .segments)
        try container.encode(report.records, forKey: .records)
        try container.encode(report.liveKeys, forKey: .liveKeys)
        try container.encode(report.bytes, forKey: .bytes)
        try container.encode(report.nextSequence, forKey: .nextSequence)
        let tail = report.truncatedTail.map {
            Tail(
                file: $0.file, offset: $0.offset, bytes: $0.bytes, damage: $0.damage.name, reason: $0.reason,
                unreachableRecords: $0.unreachableRecords)
        }
        try container.encode(tail, forKey: .truncatedTail)
        try container.encode(
            report.skipped.map {
                Range(file: $0.file, offset: $0.offset, bytes: $0.bytes, damage: $0.damage.name, reason: $0.reason)
            },
            forKey: .skipped)
        try container.encode(report.setAsideFiles, forKey: .setAsideFiles)
        try container.encode(report.interruptedCompaction?.rawValue, forKey: .interruptedCompaction)
        try container.encode(report.removedTemporaryFiles, forKey: .removedTemporaryFiles)
        try container.encode(report.readOnly, forKey: .readOnly)
        try container.encode(report.duration.seconds, forKey: .durationSeconds)
        try container.encode(report.isClean, forKey: .clean)
    }
}

/// A log `verify` could not open, as JSON.
struct OpenFailureJSON: Encodable {
    struct Failure: Encodable {
        var code: String
        var file: String?
        var offset: Int64?
        var message: String
    }

    var directory: String
    var error: Failure

    init(directory: String, error: OutboxLogError) {
        self.directory = directory
        self.error = Failure(code: "\(error.code)", file: error.file?.string, offset: error.offset, message: error.message)
    }
}
