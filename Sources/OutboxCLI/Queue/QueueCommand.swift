import ArgumentParser

/// `outbox queue …`: the durable queue (`OutboxQueue`) from a shell.
struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Append to, consume from and maintain a durable queue (OutboxQueue).",
        discussion: """
            Every command takes the queue's directory and opens it for writing: a queue \
            is open in one process at a time, so a shell pipeline feeds a reader through \
            'relay' (standard input in, elements out) rather than an 'append' beside a \
            'consume'. Elements are printed one per line, as their bytes (--json: exact, \
            with position and append time).
            """,
        subcommands: [
            QueueAppend.self,
            QueueConsume.self,
            QueueRelay.self,
            QueueCommit.self,
            QueueStats.self,
            QueueTrim.self,
            QueueRemoveConsumer.self,
        ]
    )
}
