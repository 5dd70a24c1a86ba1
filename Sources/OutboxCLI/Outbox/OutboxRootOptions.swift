import ArgumentParser
import Foundation
import Logging
import Outbox
import OutboxLog
import SystemPackage

/// The outbox root directory and the logging switch every top-level outbox
/// command (`enqueue`, `list`, `stats`, `purge`) takes.
///
/// A root holds one queue (an `OutboxLog`) per user under
/// `<root>/partitions/outbox+<keyed hash of the user>/`.
struct OutboxRootOptions: ParsableArguments {
    @Argument(help: "The outbox root directory (one queue per user under partitions/, named by a keyed hash of the user).")
    var directory: String

    @Flag(name: .long, help: "Print the engine's debug messages on standard error.")
    var verbose = false

    @Option(
        name: .long,
        help: "A file holding the queues' encryption key: its 32 raw bytes (or 24, or 16). Without it, only unencrypted queues are seen.")
    var keyFile: String?

    func validate() throws {
        if directory.isEmpty { throw ValidationError("the outbox directory must not be empty") }
        if let keyFile { _ = try Self.readKey(keyFile, option: "--key-file") }
    }

    /// The raw key in `path`; a `ValidationError` (exit 64) naming `option`
    /// if it cannot be read or has the wrong length.
    static func readKey(_ path: String, option: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(option) \(path): cannot read the key file")
        }
        guard [16, 24, 32].contains(data.count) else {
            throw ValidationError("\(option) \(path): a key file holds 32 raw bytes (or 24, or 16), not \(data.count)")
        }
        return Array(data)
    }

    var root: FilePath { FilePath(directory) }

    /// Logs to standard error at `level`, or everything with `--verbose`.
    func logger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "outbox", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .debug : level
        return logger
    }

    /// The store's defaults (durable enqueue), logging warnings only; the
    /// user's log is created only if `create` is set.
    func configuration(create: Bool) -> OutboxStoreConfiguration {
        var configuration = OutboxStoreConfiguration()
        configuration.log.logger = logger(level: .warning)
        configuration.log.createIfMissing = create
        if let keyFile {
            do {
                try configuration.setEncryptionKey(try Self.readKey(keyFile, option: "--key-file"))
            } catch {
                // validate() read it; gone since: never create a queue
                // without the key the user gave (opening then fails).
                configuration.log.createIfMissing = false
            }
        }
        return configuration
    }

    /// Fails with exit 2 and one line unless the root is an existing
    /// directory. Creates nothing.
    func requireExistingDirectory() throws(CommandFailure) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw CommandFailure(
                "\(OutboxLogError.Code.notFound): \(directory): no such outbox directory", exitCode: CommandFailure.cannotOpen)
        }
        guard isDirectory.boolValue else {
            throw CommandFailure(
                "\(OutboxLogError.Code.invalidArgument): \(directory): not a directory", exitCode: CommandFailure.cannotOpen)
        }
    }

    /// The users that have a queue under the root, sorted.
    /// Fails with exit 2 and one line if the root's queues are encrypted
    /// and no `--key-file` was given: without it they cannot even be found.
    func requireKeyIfEncrypted() throws(CommandFailure) {
        guard keyFile == nil, LogOutboxStore.holdsEncryptedQueues(root: root) else { return }
        throw CommandFailure(
            "key required: \(directory): the queues are encrypted; pass their key with --key-file",
            exitCode: CommandFailure.cannotOpen)
    }

    /// With `--key-file`, the users whose queues open with that key.
    func partitions() -> [String] { LogOutboxStore.partitions(root: root, configuration: configuration(create: false)) }

    /// Opens `user`'s queue, runs `body` and closes the queue (syncing
    /// everything). Errors become one-line ``CommandFailure``s: exit 2 if the
    /// queue cannot be opened (locked, I/O, unsupported, encrypted), 1 if it
    /// is damaged or the operation failed.
    ///
    /// Opening is a write even for reading commands: entries a crash left
    /// in flight go back to `pending`, with that attempt counted.
    func withStore<Result>(
        user: String, create: Bool, unscopedDelivery: OutboxStoreConfiguration.UnscopedDelivery = .inOrder,
        _ body: (LogOutboxStore) async throws -> Result
    ) async throws(CommandFailure) -> Result {
        let store: LogOutboxStore
        var configuration = configuration(create: create)
        configuration.unscopedDelivery = unscopedDelivery
        do {
            store = try await Self.open(root: root, partition: user, configuration: configuration)
        } catch {
            throw CommandFailure.outbox(error, directory: directory, opening: true)
        }
        Self.warnAboutOpen(store)
        let result: Result
        do {
            result = try await body(store)
        } catch {
            try? await store.close()
            throw CommandFailure.outbox(error, directory: directory)
        }
        do {
            try await store.close()
        } catch {
            throw CommandFailure.outbox(error, directory: directory, opening: false)
        }
        return result
    }
}

extension OutboxRootOptions {
    /// How long a command waits for a queue that another command holds: a
    /// look (`outbox top`, `list`, `stats`) holds it for a moment, and a
    /// drain started at that moment should not fail for it.
    static let lockPatience: Duration = .seconds(3)

    /// Opens the queue, trying again while another process holds it, for
    /// up to ``lockPatience``.
    static func open(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) -> LogOutboxStore {
        let deadline = ContinuousClock.now + lockPatience
        while true {
            do {
                return try await LogOutboxStore.open(root: root, partition: partition, configuration: configuration)
            } catch where error.isLocked && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// What the open moved aside or could not take, on standard error: the
    /// command's output stays what it documents, and nothing goes unsaid.
    static func warnAboutOpen(_ store: LogOutboxStore) {
        let report = store.recoveryReport
        if !report.isClean {
            StandardStreams.writeError("warning: \(store.directory): the open repaired damage:\n\(report)")
        }
        for problem in store.spoolReportAtOpen.problems {
            let what = problem.kind == .setAside ? "a spooled entry was set aside" : "a spool was left as it is"
            StandardStreams.writeError("warning: \(what): \(problem)")
        }
        for name in store.payloadRecovery.movedAside {
            StandardStreams.writeError(
                "warning: \(store.directory)/payloads/\(name) is not a payload file: moved aside to damaged/payloads+\(name)")
        }
    }
}

extension CommandFailure {
    /// An ``OutboxError``: a locked log or busy queue exits 2 (with
    /// "locked" in the message), damage 1, any other failure to open 2,
    /// any other failure of an open queue 1.
    static func outbox(_ error: OutboxError, directory: String, opening: Bool) -> CommandFailure {
        if error.code == .busy {
            let location = error.storage?.file?.string ?? directory
            return CommandFailure(
                "\(error.code): \(location): the queue is locked (open in another process); "
                    + "nothing was deleted, close it there first",
                exitCode: cannotOpen)
        }
        if error.code == .storage, let storage = error.storage {
            return opening ? .opening(storage, directory: directory) : .operation(storage, directory: directory)
        }
        if error.code == .corruptEntry { return CommandFailure("\(error)", exitCode: damageFound) }
        return CommandFailure("\(error)", exitCode: opening ? cannotOpen : operationFailed)
    }

    /// Any error thrown while working on an open queue.
    static func outbox(_ error: any Error, directory: String) -> CommandFailure {
        switch error {
        case let error as OutboxError: outbox(error, directory: directory, opening: false)
        default: operation(error, directory: directory)
        }
    }
}
