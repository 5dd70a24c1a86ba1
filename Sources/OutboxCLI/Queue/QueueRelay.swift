import ArgumentParser
import OutboxLocking
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
            and every element is printed, then commits durably; ends at once, exit 1, if \
            printing fails. A run killed meanwhile prints the elements after the last \
            commit again next time (at least once).
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
            // Whichever side ends first decides: input ended (then the rest
            // is printed), or a failure on either side (then the run ends at
            // once, even with the input still open).
            let end = FirstEnd()
            let printer = Task {
                do {
                    try await Self.print(consumer.tail(), output, consumer)
                } catch {
                    end.finish(.failed(error))
                }
            }
            let appender = Task {
                do {
                    let input = InputLines(maximumLine: DurableQueue.Configuration().elements.maximumRecordSize - 64)
                    while let batch = try await input.next() { try await queue.append(contentsOf: batch, durability: durability) }
                    end.finish(.inputEnded)
                } catch {
                    end.finish(.failed(error))
                }
            }
            if case .failed(let error) = await end.wait() {
                printer.cancel()
                appender.cancel()
                throw error
            }
            // The tail's page may hold elements read and not printed: back
            // to the commit, and read what is left without waiting.
            printer.cancel()
            await printer.value
            consumer.rewind()
            while true {
                let page = try await consumer.next()
                guard let last = page.last else { break }
                try await output.write(page)
                try await consumer.commit(through: last.position, durability: .buffered)
            }
            if let committed = consumer.committed {
                try await OutputWriter.syncIfFile()
                try await consumer.commit(through: committed, durability: .durable)
            }
        }
    }

    private static func print(_ tail: QueueTail, _ output: QueueElementLines, _ consumer: QueueConsumer) async throws {
        var printed = 0
        for try await element in tail {
            try await output.write([element])
            printed += 1
            let durable = printed % durableCommitEvery == 0
            if durable { try await OutputWriter.syncIfFile() }
            try await consumer.commit(through: element.position, durability: durable ? .durable : .buffered)
        }
    }
}

/// The first of the relay's two ends to arrive.
final class FirstEnd: Sendable {
    enum End: Sendable {
        case inputEnded
        case failed(any Error)
    }

    private let state = Locked<(end: End?, waiter: CheckedContinuation<End, Never>?)>((nil, nil))

    func finish(_ end: End) {
        let waiter = state.withLock { state -> CheckedContinuation<End, Never>? in
            guard state.end == nil else { return nil }
            state.end = end
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: end)
    }

    func wait() async -> End {
        await withCheckedContinuation { continuation in
            let ended = state.withLock { state -> End? in
                if let end = state.end { return end }
                state.waiter = continuation
                return nil
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }
}
