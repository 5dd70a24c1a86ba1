import ArgumentParser
import Foundation
import Outbox

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `outbox inspect DIR [--user U] [--port P] [--allow-actions]`
struct OutboxInspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Serve a live page about one queue on 127.0.0.1: counts, drain rate and latency, waiting writes and why, attempts.",
        discussion: """
            Prints the page's address and serves it until interrupted. The page follows the queue \
            the way outbox top does (the snapshot a draining process writes, or the queue opened for \
            a moment when none does): counts by state, a chart of writes delivered per second and \
            attempt latency over the last five minutes, the oldest waiting writes with why each \
            waits, failures by cause, and for a chosen entry its record, explanation and recent \
            attempts. It needs nothing but the browser: no build step, no assets from elsewhere. \
            It listens on 127.0.0.1 only and answers only requests addressed to 127.0.0.1 or \
            localhost. It is read-only unless --allow-actions is given: then each waiting or \
            quarantined entry can be retried or discarded from the page, which opens the queue \
            (refused at once while another process holds it). An encrypted queue's \
            details are shown decrypted to anyone who can reach the port on this machine. \
            DIR is never created.
            """
    )

    @OptionGroup var options: OutboxRootOptions

    @Option(help: "The user (partition) whose queue to show.")
    var user = "default"

    @Option(help: "The port to listen on, on 127.0.0.1 (0: any free port).")
    var port = 8090

    @Flag(help: "Let the page retry and discard entries.")
    var allowActions = false

    /// For tests: exit when the parent process does.
    @Flag(name: .customLong("debug-exit-with-parent"), help: .hidden)
    var exitWithParent = false

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
    }

    func run() async throws {
        try options.requireExistingDirectory()
        try options.requireKeyIfEncrypted()
        let queue = InspectedQueue(options: options, user: user, actionsAllowed: allowActions)
        // A queue it cannot read (a wrong key, damage) is refused here, not on every request of the page.
        _ = try await queue.look()
        let server = try await InspectorServer.start(queue: queue, port: port)
        StandardStreams.writeLine(
            "inspecting \(options.directory) (user \(user)) at http://127.0.0.1:\(server.port)/"
                + (allowActions ? " (retry and discard allowed)" : " (read-only)") + "; Ctrl-C stops")
        if exitWithParent {
            let parent = getppid()
            while getppid() == parent { try await Task.sleep(for: .milliseconds(250)) }
            return
        }
        try await server.task.value
    }
}
