import ArgumentParser
import OutboxQueue

/// `outbox queue commit DIR --consumer NAME --through POSITION`
struct QueueCommit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "commit",
        abstract: "Commit a consumer through a position, durably.",
        discussion: """
            The consumer reads on after --through from then on. A commit never goes back, \
            nor past the newest element: such a position is refused (exit 64) and nothing \
            changes. The consumer must exist (consume creates it).
            """
    )

    @OptionGroup var queue: QueueDirectoryOptions
    @OptionGroup var name: ConsumerOption

    @Option(help: "The position of the last element processed.")
    var through: UInt64

    func run() async throws {
        try await queue.withQueue { queue in
            try await queue.requireConsumer(named: name.consumer, "a commit creates none")
            let consumer = try await queue.consumer(named: name.consumer)
            try await consumer.commit(through: QueuePosition(rawValue: through))
        }
    }
}
