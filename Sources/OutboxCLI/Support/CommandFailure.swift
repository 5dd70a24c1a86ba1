import ArgumentParser
import Foundation
import OutboxLog

/// A failure the tool reports as one `error: …` line on standard error,
/// exiting with ``exitCode``.
struct CommandFailure: Error, CustomStringConvertible {
    /// One line, without the `error: ` prefix.
    var message: String
    var exitCode: ExitCode
    /// The engine's error, when opening the log failed.
    var openingError: OutboxLogError?

    init(_ message: String, exitCode: ExitCode, openingError: OutboxLogError? = nil) {
        self.message = oneLine(message)
        self.exitCode = exitCode
        self.openingError = openingError
    }

    var description: String { message }

    // MARK: Exit statuses shared by every `outbox log` command

    /// `verify` found damage, or another command met damage or failed.
    static let damageFound = ExitCode(1)
    /// The command's operation failed after the log was opened.
    static let operationFailed = ExitCode(1)
    /// The log could not be opened: missing, locked, unsupported format, I/O.
    static let cannotOpen = ExitCode(2)

    /// An error from `OutboxLog.open`: damage exits 1, anything else 2.
    static func opening(_ error: OutboxLogError, directory: String) -> CommandFailure {
        CommandFailure(
            describe(error, directory: directory),
            exitCode: error.code == .corruption ? damageFound : cannotOpen, openingError: error)
    }

    /// An error from an open log.
    static func operation(_ error: OutboxLogError, directory: String?) -> CommandFailure {
        CommandFailure(
            describe(error, directory: directory),
            exitCode: error.code == .corruption ? damageFound : operationFailed)
    }

    /// Any error thrown while working on an open log.
    static func operation(_ error: any Error, directory: String?) -> CommandFailure {
        switch error {
        case let failure as CommandFailure: failure
        case let error as OutboxLogError: operation(error, directory: directory)
        default: CommandFailure(String(describing: error), exitCode: operationFailed)
        }
    }

    /// `code: path[ at offset N]: message[ (errno)]`, with the full path of
    /// the file involved, or the log directory when the error names none.
    static func describe(_ error: OutboxLogError, directory: String?) -> String {
        var text = "\(error.code): "
        if let location = error.file?.string ?? directory {
            text += location
            if let offset = error.offset { text += " at offset \(offset)" }
            text += ": "
        }
        text += error.message
        if let errno = error.errno { text += " (\(errno))" }
        if error.code == .locked { text += "; close it there first" }
        return text
    }
}

/// `text` on one line: line breaks become "; ".
func oneLine(_ text: String) -> String {
    text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        .filter { !$0.isEmpty }.joined(separator: "; ")
}
