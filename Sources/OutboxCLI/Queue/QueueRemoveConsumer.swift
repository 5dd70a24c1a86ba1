import ArgumentParser
import OutboxQueue

/// `outbox queue remove-consumer DIR --consumer NAME`
struct QueueRemoveConsumer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove-consumer",
        abstract: "Delete a consumer, so that it holds nothing back.",
        discussion: "Prints whether it existed. A later consume under the name starts it anew."
    )

    @OptionGroup var queue: QueueDirectoryOptions
    @OptionGroup var name: ConsumerOption

    func run() async throws {
        let existed = try await queue.withQueue { queue in try await queue.removeConsumer(named: name.consumer) }
        StandardStreams.writeLine(existed ? "removed consumer \(name.consumer)" : "no consumer \(name.consumer)")
    }
}
