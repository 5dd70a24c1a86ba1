import ArgumentParser
import Foundation
import Outbox

/// `outbox rekey DIR --user U --key-file OLD --new-key-file NEW`
struct OutboxRekey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Re-encrypt a user's queue under a new key.",
        discussion: """
            Copies every entry and mapping of the user, sealed under the key in --new-key-file, into a new \
            directory that replaces the old one in one rename; then deletes the old one. A kill at any point \
            leaves the old key or the new one opening the whole queue, never both. Run it again after a crash: \
            it finishes what was cut. Fails (exit 2, nothing changed) while the queue is open in another process, \
            or if the old key does not open it. DIR is never created.
            """
    )

    @OptionGroup var options: OutboxRootOptions

    @Option(help: "The user (partition) whose queue to re-encrypt.")
    var user: String

    @Option(name: .long, help: "A file holding the new key: its 32 raw bytes (or 24, or 16).")
    var newKeyFile: String

    /// For the crash test: SIGKILL this process at a step of the rotation.
    @Option(name: .long, help: .hidden)
    var killSelfAt: String?

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        guard options.keyFile != nil else { throw ValidationError("--key-file (the current key) is required") }
        _ = try OutboxRootOptions.readKey(newKeyFile, option: "--new-key-file")
        if let killSelfAt, RekeyStep(rawValue: killSelfAt) == nil {
            throw ValidationError("--kill-self-at: one of \(RekeyStep.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    func run() async throws {
        try options.requireExistingDirectory()
        let configuration = options.configuration(create: false)
        guard let oldKey = configuration.encryptionKey else { throw ValidationError("--key-file: cannot read the key") }
        var newConfiguration = configuration
        try newConfiguration.setEncryptionKey(try OutboxRootOptions.readKey(newKeyFile, option: "--new-key-file"))
        guard let newKey = newConfiguration.encryptionKey else { return }
        let killAt = killSelfAt.flatMap(RekeyStep.init(rawValue:))
        do {
            try await LogOutboxStore.rekey(
                root: options.root, partition: user, from: oldKey, to: newKey, configuration: configuration
            ) { step in
                if step == killAt { kill(getpid(), SIGKILL) }
            }
        } catch {
            throw CommandFailure.outbox(error, directory: options.directory, opening: true)
        }
        StandardStreams.writeLine("re-encrypted the queue of \(user) under the new key")
    }
}
