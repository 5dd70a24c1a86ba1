import ArgumentParser
import Logging
import OutboxQueue
import SystemPackage

/// The queue's directory, which every `outbox queue` command takes, and
/// how a command opens it.
struct QueueDirectoryOptions: ParsableArguments {
    @Argument(help: "The queue's directory.")
    var directory: String

    func validate() throws {
        if directory.isEmpty { throw ValidationError("the queue directory must not be empty") }
    }

    /// Opens the queue (creating it if `create`), runs `body`, and closes
    /// it (syncing everything). Fails with one line: exit 2 if it cannot be
    /// opened, 1 if an operation failed.
    func withQueue<Result>(
        create: Bool = false, segmentSize: Int? = nil, retention: QueueRetention = QueueRetention(),
        _ body: (DurableQueue) async throws -> Result
    ) async throws(CommandFailure) -> Result {
        var configuration = DurableQueue.Configuration()
        let logger = Logger(label: "outbox", factory: { StreamLogHandler.standardError(label: $0) })
        configuration.elements.logger = logger
        configuration.consumers.logger = logger
        configuration.elements.createIfMissing = create
        configuration.consumers.createIfMissing = create
        configuration.retention = retention
        if let segmentSize { configuration.elements.segmentSize = segmentSize }
        let queue: DurableQueue
        do { queue = try await DurableQueue.open(at: FilePath(directory), configuration: configuration) } catch {
            var message = "cannot open the queue in \(directory): \(error)"
            if !create, error.log?.code == .notFound { message += "; pass --create to start a new queue" }
            throw CommandFailure(message, exitCode: error.code == .invalidArgument ? ExitCode.validationFailure : CommandFailure.cannotOpen)
        }
        let result: Result
        do {
            result = try await body(queue)
        } catch {
            try? await queue.close()
            if let failure = error as? CommandFailure { throw failure }
            // A refused call (a position past the newest, say) changed nothing: a usage error.
            let refused = (error as? QueueError)?.code == .invalidArgument
            throw CommandFailure("\(error)", exitCode: refused ? ExitCode.validationFailure : CommandFailure.operationFailed)
        }
        do { try await queue.close() } catch { throw CommandFailure("closing the queue failed: \(error)", exitCode: CommandFailure.operationFailed) }
        return result
    }
}

/// A consumer's name, as `--consumer NAME`.
struct ConsumerOption: ParsableArguments {
    @Option(help: "The consumer's name (1 to 255 UTF-8 bytes).")
    var consumer: String

    func validate() throws {
        guard (1...255).contains(consumer.utf8.count) else {
            throw ValidationError("--consumer must be 1 to 255 UTF-8 bytes, not \(consumer.utf8.count)")
        }
    }
}

extension DurableQueue.Start: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument {
        case "oldest": self = .oldest
        case "end": self = .end
        default: return nil
        }
    }

    public static var allValueStrings: [String] { ["oldest", "end"] }
}

extension DurableQueue {
    /// Whether a consumer is stored under `name` (by its UTF-8 bytes), for
    /// commands that must not create one.
    func hasConsumer(named name: String) async throws -> Bool {
        try await statistics().consumers.contains { Array($0.name.utf8) == Array(name.utf8) }
    }

    /// Fails with exit 64 unless a consumer is stored under `name`.
    func requireConsumer(named name: String, _ why: String) async throws {
        guard try await hasConsumer(named: name) else {
            throw CommandFailure("there is no consumer \(name) (\(why))", exitCode: ExitCode.validationFailure)
        }
    }
}
