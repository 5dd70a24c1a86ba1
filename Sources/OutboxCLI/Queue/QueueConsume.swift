import ArgumentParser
import OutboxQueue

/// `outbox queue consume DIR --consumer NAME [--max N] [--start oldest|end] [--no-commit] [--json]`
struct QueueConsume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consume",
        abstract: "Print the elements after a consumer's commit, one per line, and commit them.",
        discussion: """
            Reads from the consumer's last commit (creating it at --start the first time) up \
            to --max elements or the end, a page of 256 at a time; each page is committed \
            durably once it is written to standard output (and synced, if that is a file), so \
            a run killed meanwhile, or a power loss, prints \
            the uncommitted page again next time (at least once). --no-commit only looks, \
            at a consumer that exists.
            """
    )

    @OptionGroup var queue: QueueDirectoryOptions
    @OptionGroup var name: ConsumerOption

    @Option(help: "Stop after this many elements (1...\(OptionRange.maximumCount); default: every element there).")
    var max: Int?

    @Option(help: "Where a new consumer starts: oldest or end.")
    var start: DurableQueue.Start = .oldest

    @Flag(help: "Print without committing.")
    var noCommit = false

    @Flag(help: "Print each element as a JSON object: position, appendedAt (ms since 1970), text or base64.")
    var json = false

    func validate() throws {
        try OptionRange.require(max, in: 1...OptionRange.maximumCount, "--max")
    }

    func run() async throws {
        let output = QueueElementLines(json: json)
        try await queue.withQueue { queue in
            if noCommit { try await queue.requireConsumer(named: name.consumer, "--no-commit only looks, and creates none") }
            let consumer = try await queue.consumer(named: name.consumer, startingAt: start)
            var left = max ?? Int.max
            while left > 0 {
                let page = try await consumer.next(max: Swift.min(256, left))
                guard let last = page.last else { break }
                try await output.write(page)
                if !noCommit {
                    // Printed to a file, the page is synced before the durable commit that gives it up.
                    try await OutputWriter.syncIfFile()
                    try await consumer.commit(through: last.position)
                }
                left -= page.count
            }
        }
    }
}
