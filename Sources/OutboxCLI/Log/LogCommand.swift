import ArgumentParser

/// `outbox log …`: inspect and maintain the storage engine's log directly.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Inspect and maintain an OutboxLog directory.",
        discussion: """
            Every command takes the log's directory. verify, dump and stats open it \
            read-only and change nothing on disk; append, compact and remove-expired open it for writing. \
            A log can be open in only one process at a time.
            """,
        subcommands: [
            LogAppend.self,
            LogVerify.self,
            LogDump.self,
            LogCompact.self,
            LogRemoveExpired.self,
            LogStats.self,
            LogMakeVectors.self,
            LogMakeStoreVectors.self,
        ]
    )
}
