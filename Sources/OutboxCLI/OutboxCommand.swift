import ArgumentParser
import Foundation
import OutboxLog

/// The `outbox` command-line tool.
///
/// Every group of commands is one subcommand of this root. To add a group
/// (`enqueue`, `list`, `drain`, `demo`, `torture`, …), write its command type
/// in its own folder and list it in ``configuration``'s `subcommands`.
///
/// Errors are printed as a single `error: …` line on standard error (see
/// ``main()``), never with a usage screen or a Swift error dump.
@main
struct OutboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox",
        abstract: "Durable outbox queues, their storage engine, and a demo of the whole promise.",
        discussion: """
            Exit status: 0 success; 1 damage found or the operation failed; \
            2 the log could not be opened (missing, locked, unsupported format, I/O error); \
            64 invalid arguments.
            """,
        subcommands: [
            LogCommand.self,
            QueueCommand.self,
            OutboxEnqueue.self,
            OutboxList.self,
            OutboxStats.self,
            OutboxExplain.self,
            OutboxTop.self,
            OutboxInspect.self,
            OutboxPurge.self,
            OutboxRekey.self,
            OutboxDrain.self,
            OutboxDemo.self,
            OutboxServe.self,
            KeysCommand.self,
            TortureCommand.self,
            TortureWorkerCommand.self,
        ]
    )

    /// Parses and runs the command like ArgumentParser's own `main()`, but
    /// reports every failure as one `error: …` line on standard error.
    static func main() async {
        do {
            var command = try await asyncParseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exitReporting(error)
        }
    }

    /// Prints `error` (help and `--version` go to standard output as usual)
    /// and exits with its status.
    static func exitReporting(_ error: any Error) -> Never {
        if let failure = error as? CommandFailure {
            StandardStreams.writeError("error: \(failure.message)")
            Foundation.exit(failure.exitCode.rawValue)
        }
        if let failure = error as? OutboxLogError {
            exitReporting(CommandFailure.operation(failure, directory: nil))
        }
        if let exitCode = error as? ExitCode {
            Foundation.exit(exitCode.rawValue)
        }
        let code = exitCode(for: error)
        if code == .success {
            // --help, --version, CleanExit: ArgumentParser prints them.
            exit(withError: error)
        }
        StandardStreams.writeError("error: \(oneLine(message(for: error)))")
        Foundation.exit(code.rawValue)
    }
}
