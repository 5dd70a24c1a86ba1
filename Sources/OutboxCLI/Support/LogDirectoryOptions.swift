import ArgumentParser
import Logging
import OutboxLog
import SystemPackage

/// The log directory and the logging switch every `outbox log` command takes.
struct LogDirectoryOptions: ParsableArguments {
    @Argument(help: "The log's directory.")
    var directory: String

    @Flag(name: .long, help: "Print the engine's debug messages on standard error.")
    var verbose = false

    func validate() throws {
        if directory.isEmpty { throw ValidationError("the log directory must not be empty") }
    }

    /// Logs to standard error at `level`, or everything with `--verbose`.
    func logger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "outbox", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .debug : level
        return logger
    }

    /// How a command opens the log.
    enum Access {
        /// Read-only: nothing on disk changes. `salvage` reports every
        /// damaged range instead of failing on the first one.
        case readOnly(salvage: Bool)
        /// For writing, creating the directory if `create` is set.
        case readWrite(create: Bool)
    }

    /// The engine's defaults, with this tool's logger and the given access.
    ///
    /// A writable log logs warnings (a torn tail it cut, say). A read-only
    /// log logs only errors: what its recovery found is the command's own
    /// output (`verify`) or its one-line warning (`dump`, `stats`), and the
    /// engine's "cut a torn tail" would be wrong, since nothing is cut.
    func configuration(_ access: Access, segmentSize: Int? = nil) -> OutboxLog.Configuration {
        var configuration = OutboxLog.Configuration()
        if let segmentSize { configuration.segmentSize = segmentSize }
        switch access {
        case .readOnly(let salvage):
            configuration.logger = logger(level: .error)
            configuration.readOnly = true
            configuration.createIfMissing = false
            configuration.recoveryMode = salvage ? .salvage : .strict
        case .readWrite(let create):
            configuration.logger = logger(level: .warning)
            configuration.createIfMissing = create
        }
        return configuration
    }

    /// Opens the log, or fails with a one-line error: exit 2 if it cannot be
    /// opened, 1 if it is damaged.
    func open(_ access: Access, segmentSize: Int? = nil) async throws(CommandFailure) -> OutboxLog {
        do {
            return try await OutboxLog.open(
                at: FilePath(directory), configuration: configuration(access, segmentSize: segmentSize))
        } catch {
            throw CommandFailure.opening(error, directory: directory)
        }
    }

    /// Opens the log, runs `body`, and closes the log (which, for a writable
    /// log, syncs everything). Any error becomes a ``CommandFailure``.
    func withLog<Result>(
        _ access: Access, segmentSize: Int? = nil, _ body: (OutboxLog) async throws -> Result
    ) async throws(CommandFailure) -> Result {
        let log = try await open(access, segmentSize: segmentSize)
        let result: Result
        do {
            result = try await body(log)
        } catch {
            try? await log.close()
            throw CommandFailure.operation(error, directory: directory)
        }
        do {
            try await log.close()
        } catch {
            throw CommandFailure.operation(error, directory: directory)
        }
        return result
    }

    /// Warns on standard error when a read-only open found damage it did not
    /// repair (a torn tail, in strict mode), so a dump or stats of a damaged
    /// log does not look clean.
    func warnIfDamaged(_ report: RecoveryReport) {
        guard !report.isClean else { return }
        var parts: [String] = []
        if let tail = report.truncatedTail {
            parts.append("torn tail in \(tail.file) at offset \(tail.offset), \(tail.bytes) bytes (\(tail.reason))")
        }
        if !report.skipped.isEmpty { parts.append("\(report.skipped.count) damaged range(s) skipped") }
        StandardStreams.writeError(
            "warning: \(directory): " + parts.joined(separator: ", ")
                + "; not repaired (read-only), run 'outbox log verify' for details")
    }
}
