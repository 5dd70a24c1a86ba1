import ArgumentParser
import OutboxQueue

/// `outbox queue relay DIR --consumer NAME [--durability LEVEL] [--start oldest|end] [--json] [--create]`
struct QueueRelay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Append each line of standard input, and print each element as it arrives: a durable buffer in a pipeline.",
        discussion: """
            Appends the lines of standard input (at --durability, default durable) and, \
            side by side, prints the consumer's elements one per line as they arrive, from \
            its last commit, committing each once written. Ends when standard input ends \
            and every element is printed, then commits durably. A run killed meanwhile \
            prints the elements after the last commit again next time (at least once).
            """
    )

    @OptionGroup var queue: QueueDirectoryOptions
    @OptionGroup var name: ConsumerOption

    @Option(help: "How far each append travels before it returns: buffered, written or durable.")
    var durability: Durability = .durable

    @Option(help: "Where a new consumer starts: oldest or end.")
    var start: DurableQueue.Start = .oldest

    @Flag(help: "Print each element as a JSON object: position, appendedAt (ms since 1970), text or base64.")
    var json = false

    @Flag(help: "Create the queue's directory if it does not exist.")
    var create = false

    /// Commits are buffered as elements are printed, and made durable this often.
    static let durableCommitEvery = 256

    func run() async throws {
        let output = QueueElementLines(json: json)
        try await queue.withQueue(create: create) { queue in
            let consumer = try await queue.consumer(named: name.consumer, startingAt: start)
            let printer = Task {
                var printed = 0
                for try await element in consumer.tail() {
                    try output.write([element])
                    printed += 1
                    let durability: Durability = printed % Self.durableCommitEvery == 0 ? .durable : .buffered
                    try await consumer.commit(through: element.position, durability: durability)
                }
            }
            do {
                let input = InputLines(maximumLine: DurableQueue.Configuration().elements.maximumRecordSize - 64)
                while let batch = try await input.next() {
                    try await queue.append(contentsOf: batch, durability: durability)
                }
            } catch {
                printer.cancel()
                throw error
            }
            // Input ended: what is left is read without waiting. The tail's
            // page may hold elements read and not printed: back to the commit.
            printer.cancel()
            try await printer.value
            consumer.rewind()
            while true {
                let page = try await consumer.next()
                guard let last = page.last else { break }
                try output.write(page)
                try await consumer.commit(through: last.position, durability: .buffered)
            }
            if let committed = consumer.committed { try await consumer.commit(through: committed, durability: .durable) }
        }
    }
}
