import ArgumentParser
import OutboxQueue

/// `outbox queue trim DIR [--max-age D] [--max-bytes N] [--held-by every|none|NAME,...] [--json]`
struct QueueTrim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trim",
        abstract: "Remove what every consumer committed past, then what is older or larger than the limits.",
        discussion: """
            Whole segments go, oldest first. The limits never remove an element that a \
            consumer they wait for (--held-by: every consumer by default; none; or names of \
            existing consumers, comma-separated) has not committed; the report names consumers that missed \
            elements and those holding the queue over its limits.
            """
    )

    @OptionGroup var queue: QueueDirectoryOptions

    @Option(help: "Remove elements appended longer ago than this (\(DurationArgument.forms)).", transform: DurationArgument.parse)
    var maxAge: Duration?

    @Option(help: "Remove the oldest segments until the elements take at most this many bytes.")
    var maxBytes: Int64?

    @Option(help: "Which consumers the limits wait for: every, none, or names separated by commas.")
    var heldBy = "every"

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    func validate() throws {
        if let maxBytes, maxBytes < 0 { throw ValidationError("--max-bytes must be 0 or more, not \(maxBytes)") }
        if case .consumers(let names) = try holders {
            for name in names where !(1...255).contains(name.utf8.count) {
                throw ValidationError("--held-by names are 1 to 255 UTF-8 bytes, not \(name.utf8.count) (\"\(name)\")")
            }
        }
    }

    /// `--held-by`, parsed: every, none, or names separated by commas.
    var holders: QueueRetention.Holders {
        get throws(ValidationError) {
            switch heldBy {
            case "every": return .everyConsumer
            case "none": return .noConsumer
            default:
                let names = heldBy.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                guard !names.isEmpty else { throw ValidationError("--held-by needs every, none or consumer names") }
                return .consumers(names)
            }
        }
    }

    struct Report: Encodable {
        struct Overtaken: Encodable {
            var consumer: String
            var committed: UInt64?
            var readsOnFrom: UInt64
        }

        var segmentsRemoved: Int
        var bytesRemoved: Int64
        var elementsRemoved: Int
        var removedBelow: UInt64?
        var overtaken: [Overtaken]
        var heldBackBy: [String]
    }

    func run() async throws {
        let holders = try self.holders
        let retention = QueueRetention(maximumAge: maxAge, maximumBytes: maxBytes, heldBy: holders)
        let trimmed = try await queue.withQueue(retention: retention) { queue in
            // A mistyped name would let the limits remove what that consumer has not read.
            if case .consumers(let names) = holders {
                for name in names { try await queue.requireConsumer(named: name, "--held-by names consumers the limits wait for") }
            }
            return try await queue.trim()
        }
        let report = Report(
            segmentsRemoved: trimmed.segmentsRemoved, bytesRemoved: trimmed.bytesRemoved, elementsRemoved: trimmed.elementsRemoved,
            removedBelow: trimmed.removedBelow?.rawValue,
            overtaken: trimmed.overtaken.map { .init(consumer: $0.consumer, committed: $0.committed?.rawValue, readsOnFrom: $0.readsOnFrom.rawValue) },
            heldBackBy: trimmed.heldBackBy)
        try StandardStreams.writeReport(json: json, report, text: "\(trimmed)")
    }
}
