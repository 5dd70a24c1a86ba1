import ArgumentParser
import Foundation
import Outbox

/// `outbox stats DIR [--user U] [--json]`
struct OutboxStats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Print a user's entry counts and bytes by status, and the users present under DIR.",
        discussion: """
            Counts and stored bytes for every status, then unsent (pending, inFlight, waitingToRetry), \
            needsAttention (quarantined, conflict) and total. With --json, one object: "directory", \
            "user", "partitions" (every user with a queue under DIR), "counts" and "bytes" \
            (by status, every status present), "unsent", "needsAttention", "total", "totalBytes". \
            A user without a queue has all counts 0. \
            Note: opening a queue is a write: entries a crash left in flight go back to pending \
            (with that attempt counted), exactly as the app's own open would. DIR is never created.
            """
    )

    @OptionGroup var options: OutboxRootOptions

    @Option(help: "The user (partition) whose entries to count.")
    var user = "default"

    @Flag(help: "Print the statistics as one JSON object.")
    var json = false

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
    }

    func run() async throws {
        try options.requireExistingDirectory()
        try options.requireKeyIfEncrypted()
        let partitions = options.partitions()
        var summary = OutboxSummary()
        var setAside = 0
        if partitions.contains(user) {
            (summary, setAside) = try await options.withStore(user: user, create: false) { store in
                (try await store.summary(), try await store.setAsideRecords().count)
            }
        }
        let output = SummaryJSON(
            directory: options.directory, user: user, partitions: partitions, summary: summary, setAside: setAside)
        if json {
            StandardStreams.writeLine(try JSONLines().encode(output))
            return
        }
        var text = """
            directory        \(output.directory)
            partitions       \(partitions.isEmpty ? "(none)" : partitions.joined(separator: ", "))
            user             \(user)\(partitions.contains(user) ? "" : " (no queue)")

            """
        for status in OutboxStatus.allCases {
            text += "\(status.rawValue.padding(toLength: 17, withPad: " ", startingAt: 0))"
                + "\(summary.count(status)) entries, \(summary.bytes[status] ?? 0) bytes\n"
        }
        text += """
            unsent           \(summary.unsent)
            needs attention  \(summary.needsAttention)
            total            \(summary.total) entries, \(summary.totalBytes) bytes
            set aside        \(setAside) spooled entries the queue could never take

            """
        StandardStreams.write(text)
    }
}

/// ``OutboxSummary`` as JSON, every status spelled out.
struct SummaryJSON: Encodable {
    var directory: String
    var user: String
    var partitions: [String]
    var counts: [String: Int]
    var bytes: [String: Int]
    var unsent: Int
    var needsAttention: Int
    var total: Int
    var totalBytes: Int
    var setAside: Int

    init(directory: String, user: String, partitions: [String], summary: OutboxSummary, setAside: Int = 0) {
        self.directory = directory
        self.user = user
        self.partitions = partitions
        counts = Dictionary(uniqueKeysWithValues: OutboxStatus.allCases.map { ($0.rawValue, summary.count($0)) })
        bytes = Dictionary(uniqueKeysWithValues: OutboxStatus.allCases.map { ($0.rawValue, summary.bytes[$0] ?? 0) })
        unsent = summary.unsent
        needsAttention = summary.needsAttention
        total = summary.total
        totalBytes = summary.totalBytes
        self.setAside = setAside
    }
}
