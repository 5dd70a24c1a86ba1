import ArgumentParser
import Outbox

/// `outbox purge DIR --user U`
struct OutboxPurge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Delete a user's queue, as a logout does.",
        discussion: """
            Deletes every entry and mapping of the user: its directory under DIR/partitions/ (an encrypted queue's needs --key-file). \
            Fails (exit 2, nothing deleted) while the queue is open in another process. \
            A user without a queue is not an error: nothing is deleted. DIR is never created.
            """
    )

    @OptionGroup var options: OutboxRootOptions

    @Option(help: "The user (partition) whose queue to delete.")
    var user: String

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
    }

    func run() async throws {
        try options.requireExistingDirectory()
        try options.requireKeyIfEncrypted()
        guard options.partitions().contains(user) else {
            StandardStreams.writeLine("no queue for \(user) in \(options.directory): nothing deleted")
            return
        }
        do {
            try await LogOutboxStore.purge(root: options.root, partition: user, configuration: options.configuration(create: false))
        } catch {
            throw CommandFailure.outbox(error, directory: options.directory, opening: false)
        }
        StandardStreams.writeLine("purged the queue of \(user)")
    }
}
