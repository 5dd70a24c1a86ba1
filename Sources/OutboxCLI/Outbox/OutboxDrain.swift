import ArgumentParser
import Foundation
import Outbox
import OutboxHTTP

/// `outbox drain DIR --base-url URL [--user U] [--until-empty] [--timeout SECONDS] [--json]`
struct OutboxDrain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drain",
        abstract: "Deliver a user's queue to a server over HTTP and print what happened.",
        discussion: """
            Every entry is sent to <base-url><endpoint> with its method, payload and stored \
            headers, and its Idempotency-Key (the same on every attempt). 2xx delivers; 408, \
            425, 429, 5xx and network errors are retried with backoff (Retry-After honoured); \
            409 is left in conflict; other 4xx quarantine the entry. Without --until-empty, \
            one pass over what is due now; with it, retries as they come due until nothing \
            is left to send or --timeout passes. Exit status: 0 done (with --until-empty: \
            nothing left unsent), 1 entries remain unsent, 2 the queue could not be opened.
            """
    )

    @OptionGroup var options: OutboxRootOptions

    @Option(help: "The server the entries' endpoints are relative to, e.g. http://127.0.0.1:8080.")
    var baseURL: String

    @Option(help: "The user (partition) whose queue to drain.")
    var user = "default"

    @Option(help: "A bearer token to send as Authorization.")
    var token: String?

    @Flag(help: "Keep going, waiting for retries, until nothing is left to send.")
    var untilEmpty = false

    @Option(help: "Give up after this many seconds (with --until-empty).")
    var timeout: Double = 60

    @Option(help: "How many deliveries may run at once.")
    var concurrency = 4

    @Flag(help: "Print the summary as one JSON object.")
    var json = false

    func validate() throws {
        guard let url = URL(string: baseURL), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError("--base-url must be an http(s) URL, not \"\(baseURL)\"")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
    }

    struct Summary: Encodable {
        var user: String
        var delivered = 0
        var retried = 0
        var quarantined = 0
        var conflicts = 0
        var unhandled = 0
        var remaining = 0
        var needsAttention = 0
        var seconds = 0.0
    }

    func run() async throws {
        try options.requireExistingDirectory()
        let started = Date()
        let deadline = started.addingTimeInterval(timeout)
        let summary = try await options.withStore(user: user, create: false) { store -> Summary in
            var handler = HTTPOutboxHandler.Configuration(baseURL: URL(string: baseURL)!, tokenProvider: token.map(StaticTokenProvider.init))
            handler.requestTimeout = .seconds(min(30, max(1, Int(timeout))))
            var configuration = OutboxDispatcherConfiguration()
            configuration.maximumConcurrentDeliveries = concurrency
            configuration.logger = options.logger(level: .warning)
            let dispatcher = OutboxDispatcher(
                store: store, handlers: [:], fallback: HTTPOutboxHandler(configuration: handler), configuration: configuration)
            var summary = Summary(user: user)
            while true {
                let report = await dispatcher.flush()
                summary.delivered += report.delivered
                summary.retried += report.retried
                summary.quarantined += report.quarantined
                summary.conflicts += report.conflicts
                summary.unhandled = max(summary.unhandled, report.unhandled)
                let state = try await store.summary()
                summary.remaining = state.unsent
                summary.needsAttention = state.needsAttention
                guard untilEmpty, state.unsent > 0, Date() < deadline else { break }
                // Sleep until the next retry is due (or the deadline).
                let next = try await store.nextDueDate() ?? deadline
                let wake = min(next, deadline)
                if wake > Date() { try await SystemOutboxClock().sleep(until: wake) }
            }
            await dispatcher.stop()
            return summary
        }
        var result = summary
        result.seconds = (Date().timeIntervalSince(started) * 1000).rounded() / 1000
        if json {
            StandardStreams.writeLine(try JSONLines().encode(result))
        } else {
            StandardStreams.writeLine(
                "delivered \(result.delivered), retried \(result.retried), quarantined \(result.quarantined), "
                    + "conflicts \(result.conflicts), remaining \(result.remaining), needs attention \(result.needsAttention) "
                    + "(\(result.seconds) s)")
        }
        if untilEmpty && result.remaining > 0 { throw ExitCode(1) }
    }
}
