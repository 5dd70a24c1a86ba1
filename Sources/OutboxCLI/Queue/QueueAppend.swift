import ArgumentParser
import OutboxQueue

/// `outbox queue append DIR [ELEMENT...] [--durability LEVEL] [--create] [--segment-size BYTES]`
struct QueueAppend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "append",
        abstract: "Append elements: the arguments, or else each line of standard input.",
        discussion: """
            With no ELEMENT, each line of standard input (its bytes, without the line break) \
            is an element, appended as it arrives in atomic batches of the lines one read \
            brings. Each element's position is printed on its own line once its batch \
            reached --durability (default durable).
            """
    )

    @OptionGroup var queue: QueueDirectoryOptions

    @Argument(help: "The elements, as text (default: the lines of standard input).")
    var elements: [String] = []

    @Option(help: "How far each append travels before it returns: buffered, written or durable.")
    var durability: Durability = .durable

    @Flag(help: "Create the queue's directory if it does not exist.")
    var create = false

    @Option(help: "Start a new segment of elements once one reaches this many bytes (4096 to 2 GiB; default 8 MiB).")
    var segmentSize: Int?

    func validate() throws {
        try OptionRange.require(segmentSize, in: 4096...(2 << 30), "--segment-size")
    }

    func run() async throws {
        try await queue.withQueue(create: create, segmentSize: segmentSize) { queue in
            if !elements.isEmpty {
                try await Self.append(elements.map { Array($0.utf8) }, to: queue, durability: durability)
                return
            }
            let input = InputLines(maximumLine: DurableQueue.Configuration().elements.maximumRecordSize - 64)
            while let batch = try await input.next() {
                try await Self.append(batch, to: queue, durability: durability)
            }
        }
    }

    /// Appends `batch` atomically and prints its positions.
    static func append(_ batch: [[UInt8]], to queue: DurableQueue, durability: Durability) async throws {
        let last = try await queue.append(contentsOf: batch, durability: durability)
        // A batch's records are numbered consecutively, ending at `last`.
        var output = OutputBuffer()
        for position in (last.rawValue - UInt64(batch.count) + 1)...last.rawValue { output.line(String(position)) }
        output.flush()
    }
}
