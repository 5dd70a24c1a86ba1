import ArgumentParser
import Foundation
import Outbox

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `outbox top DIR [--user U] [--interval S] [--once | --count N]`
struct OutboxTop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "Follow one queue live: counts, drain rate, attempt latency, the oldest waiting writes and why, failures.",
        discussion: """
            Reads the snapshot the draining process writes beside the queue (`outbox drain` writes one \
            every second; an app turns it on with OutboxDispatcherConfiguration.snapshotInterval), so \
            it follows a queue another process holds open, without its lock. When no live process \
            writes one, it opens the queue for a moment at each refresh and reads it (no drain rate \
            or latency then); a queue held by a process that writes no snapshot is shown as such. \
            On a terminal the screen is redrawn in place (q or Ctrl-C quits, the terminal is left as it \
            was); otherwise one block of lines per refresh. --once prints one block and exits; \
            --count N stops after N refreshes. \
            DIR is never created.
            """
    )

    @OptionGroup var options: OutboxRootOptions

    @Option(help: "The user (partition) whose queue to follow.")
    var user = "default"

    @Option(help: "Seconds between refreshes (0.1 to 3600).")
    var interval: Double = 1

    @Flag(help: "Print one block and exit.")
    var once = false

    @Option(help: "Stop after this many refreshes (1 to 1000000).")
    var count: Int?

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        guard interval.isFinite, (0.1...3600).contains(interval) else {
            throw ValidationError("--interval must be between 0.1 and 3600 seconds")
        }
        if let count, !(1...1_000_000).contains(count) { throw ValidationError("--count must be between 1 and 1000000") }
    }

    func run() async throws {
        try options.requireExistingDirectory()
        try options.requireKeyIfEncrypted()
        let refreshes = once ? 1 : count ?? Int.max
        let terminal = TopTerminal(fullScreen: !once && isatty(STDOUT_FILENO) == 1)
        defer { terminal.restore() }
        let pause = Duration.milliseconds(Int64((interval * 1000).rounded()))
        var reader = QueueReader(options: options, user: user, freshFor: max(5, interval * 5))
        for refresh in 0..<refreshes {
            if refresh > 0 { await terminal.wait(pause) }
            if terminal.quitting { break }
            let view = try await reader.look()
            terminal.show(
                TopScreen(directory: options.directory, user: user, source: view.source, snapshot: view.snapshot, now: Date())
                    .lines())
        }
    }
}
