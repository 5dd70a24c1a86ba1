import ArgumentParser
import Foundation
import Outbox
import OutboxHTTP

/// `outbox drain DIR --base-url URL [--user U] [--until-empty] [--timeout DURATION] [--json]`
struct OutboxDrain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drain",
        abstract: "Deliver a user's queue to a server over HTTP and print what happened.",
        discussion: """
            Every entry is sent to <base-url><endpoint> with its method, payload and stored \
            headers, and its Idempotency-Key (the same on every attempt). 2xx delivers; 408, \
            425, 429, 5xx and network errors are retried with backoff (Retry-After honoured); \
            a server saying a request with the key is still in progress (a 409 to a resend \
            whose answer was lost, say) is polled; a replayed answer delivers; another 409 is \
            left in conflict; other 4xx quarantine the entry. Without --until-empty, \
            one pass over what is due now; with it, retries as they come due until nothing \
            is left to send or --timeout passes. Exit status: 0 done (with --until-empty: \
            nothing left unsent), 1 entries remain unsent, 2 the queue could not be opened, \
            3 entries need attention (left in conflict or quarantined: a person or the app \
            decides; the summary lists each with its reason), whether or not others remain. \
            With --until-empty the command returns within --timeout plus one request timeout \
            (min(30 s, --timeout)): no attempt starts after the deadline, and every attempt \
            records its outcome, so no entry is left in flight. The summary counts attempts \
            whose answer was lost after the request was sent (interrupted: resent promptly, \
            not failures) and attempts that never reached the server (not sent: not counted \
            toward maxAttempts) apart from failures, and says why each remaining entry is left.
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

    @Option(
        help: "Give up after this long (with --until-empty; default 60s; plain numbers are seconds; up to 100 years).",
        transform: DurationArgument.parse)
    var timeout: Duration = .seconds(60)

    @Option(help: "How many deliveries may run at once (1...\(maximumConcurrency)): one per scope, and one for the unscoped entries unless --unscoped-delivery concurrent.")
    var concurrency = 4

    /// How entries without a scope are sent (``OutboxStoreConfiguration/UnscopedDelivery``).
    enum UnscopedDelivery: String, ExpressibleByArgument, CaseIterable {
        case inOrder = "in-order"
        case concurrent

        var configuration: OutboxStoreConfiguration.UnscopedDelivery { self == .inOrder ? .inOrder : .concurrent }
    }

    @Option(help: "Entries without a scope go in-order (one at a time, in the order they were enqueued: the library's default, so a queue an app fills keeps its order) or concurrent (up to --concurrency at once, in no order).")
    var unscopedDelivery: UnscopedDelivery = .inOrder

    @Option(
        help: "How long the server keeps idempotency keys (default 24h; plain numbers are hours; 0: forever; up to 100 years). An entry whose answer was lost longer ago is left for a person instead of resent.",
        transform: { try DurationArgument.parse($0, plainUnit: .hours) })
    var keyRetention: Duration = .seconds(24 * 3600)

    @Option(
        help: "How long a server may report an entry still in progress before it is left for a person (default 300s; plain numbers are seconds; up to 100 years).",
        transform: DurationArgument.parse)
    var inProgressBudget: Duration = .seconds(300)

    @Option(
        help: "How often to write the queue's snapshot for outbox top (default 1s; plain numbers are seconds; 0: none).",
        transform: DurationArgument.parse)
    var snapshotInterval: Duration = .seconds(1)

    /// The most deliveries `--concurrency` lets run at once.
    static let maximumConcurrency = 1024

    @Flag(help: "Print the summary as one JSON object.")
    var json = false

    func validate() throws {
        guard let url = URL(string: baseURL), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError("--base-url must be an http(s) URL, not \"\(baseURL)\"")
        }
        try OptionRange.require(timeout, "--timeout", positive: true)
        try OptionRange.require(concurrency, in: 1...Self.maximumConcurrency, "--concurrency")
        try OptionRange.require(keyRetention, "--key-retention", positive: false)
        try OptionRange.require(inProgressBudget, "--in-progress-budget", positive: true)
        try OptionRange.require(snapshotInterval, "--snapshot-interval", positive: false)
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
    }

    struct Summary: Encodable {
        var user: String
        var delivered = 0
        var waitingToRetry = 0
        /// Attempts sent whose answer was lost, resent promptly (not failures).
        var interrupted = 0
        /// Attempts that never reached the server (not counted toward maxAttempts).
        var notSent = 0
        var inProgress = 0
        /// Deliveries the server answered from its idempotency record (also in `delivered`).
        var replayed = 0
        var quarantined = 0
        var conflicts = 0
        var unhandled = 0
        var remaining = 0
        var needsAttention = 0
        /// Why the remaining entries are still queued: reason → how many.
        var left: [String: Int] = [:]
        /// When the next remaining entry is due, if one is waiting for its time.
        var nextRetryAt: String?
        /// Each entry needing attention (`conflict` or `quarantined`): what it is and why.
        var attention: [Attention] = []
        var seconds = 0.0
        var concurrency = 0
        /// in-order or concurrent.
        var unscopedDelivery = ""
    }

    /// An entry left for a person or the app.
    struct Attention: Encodable {
        var id: String
        var status: String
        var request: String
        /// The failure's cause (``OutboxFailure/Cause/name``), and for a
        /// dependency failure the parent and what became of it.
        var cause: String?
        var parent: String?
        var parentFate: String?
        var httpStatus: Int?
        var reason: String
    }

    /// The exit status when entries need attention.
    static let needsAttentionExitCode = ExitCode(3)

    func run() async throws {
        try options.requireExistingDirectory()
        let started = Date()
        let deadline = started.addingTimeInterval(timeout.seconds)
        let summary = try await options.withStore(
            user: user, create: false, unscopedDelivery: unscopedDelivery.configuration
        ) { store -> Summary in
            var handler = HTTPOutboxHandler.Configuration(baseURL: URL(string: baseURL)!, tokenProvider: token.map(StaticTokenProvider.init))
            let requestTimeout = min(.seconds(30), timeout)
            handler.requestTimeout = requestTimeout
            var configuration = OutboxDispatcherConfiguration()
            configuration.maximumConcurrentDeliveries = concurrency
            // The request's own timeout comes first (it knows whether the
            // request left); the watchdog a second later is the backstop.
            configuration.deliveryTimeout = requestTimeout + .seconds(1)
            configuration.logger = options.logger(level: .warning)
            configuration.keyRetention = keyRetention == .zero ? nil : keyRetention
            configuration.inProgressBudget = inProgressBudget
            configuration.snapshotInterval = snapshotInterval == .zero ? nil : snapshotInterval
            let dispatcher = OutboxDispatcher(
                store: store, handlers: [:], fallback: HTTPOutboxHandler(configuration: handler), configuration: configuration)
            let report = untilEmpty ? await dispatcher.drain(until: deadline) : await dispatcher.flush()
            await dispatcher.stop()
            var summary = Summary(user: user, concurrency: concurrency, unscopedDelivery: unscopedDelivery.rawValue)
            summary.delivered = report.delivered
            summary.waitingToRetry = report.waitingToRetry
            summary.interrupted = report.interrupted
            summary.notSent = report.notSent
            summary.inProgress = report.inProgress
            summary.replayed = report.replayed
            summary.quarantined = report.quarantined
            summary.conflicts = report.conflicts
            summary.unhandled = report.unhandled
            let state = try await store.summary()
            summary.remaining = state.unsent
            summary.needsAttention = state.needsAttention
            if state.unsent > 0 { (summary.left, summary.nextRetryAt) = try await Self.whatIsLeft(store) }
            if state.needsAttention > 0 { summary.attention = try await Self.needingAttention(store) }
            return summary
        }
        var result = summary
        if unscopedDelivery == .inOrder, concurrency > 1, result.delivered + result.waitingToRetry > 1 {
            StandardStreams.writeError(
                "note: entries without a scope went one at a time, in the order they were enqueued; "
                    + "--unscoped-delivery concurrent sends up to \(concurrency) at once")
        }
        result.seconds = (Date().timeIntervalSince(started) * 1000).rounded() / 1000
        if json {
            StandardStreams.writeLine(try JSONLines().encode(result))
        } else {
            StandardStreams.writeLine(
                "delivered \(result.delivered) (replayed \(result.replayed)), waiting to retry \(result.waitingToRetry), "
                    + "interrupted \(result.interrupted), not sent \(result.notSent), in progress \(result.inProgress), "
                    + "quarantined \(result.quarantined), "
                    + "conflicts \(result.conflicts), remaining \(result.remaining), needs attention \(result.needsAttention) "
                    + "(\(result.seconds) s)")
            if result.remaining > 0 {
                let reasons = result.left.sorted { $0.value > $1.value }.map { "\($0.value) × \($0.key)" }
                StandardStreams.writeLine(
                    "left: " + reasons.joined(separator: "; ") + (result.nextRetryAt.map { "; next retry at \($0)" } ?? ""))
            }
            for entry in result.attention {
                StandardStreams.writeLine(
                    "needs attention: \(entry.id) \(entry.request) (\(entry.status)): \(entry.reason)")
            }
        }
        if !result.attention.isEmpty { throw Self.needsAttentionExitCode }
        if untilEmpty && result.remaining > 0 { throw ExitCode(1) }
    }

    /// Every entry left in `conflict` or `quarantined`, with its request and reason.
    static func needingAttention(_ store: LogOutboxStore) async throws -> [Attention] {
        try await store.entries(matching: OutboxFilter(statuses: [.conflict, .quarantined])).map { entry in
            Attention(
                id: "\(entry.id)", status: "\(entry.status)", request: "\(entry.method) \(entry.endpoint)",
                cause: entry.lastFailure?.cause.name, parent: entry.lastFailure?.dependency.map { "\($0.parent)" },
                parentFate: entry.lastFailure?.dependency?.name, httpStatus: entry.lastFailure?.httpStatus,
                reason: oneLine(entry.lastFailure?.description ?? "no reason recorded"))
        }
    }

    /// Why each unsent entry is still queued, grouped: its last failure's
    /// cause, HTTP status and the gist of its message, or that it was never
    /// attempted.
    static func whatIsLeft(_ store: LogOutboxStore) async throws -> (reasons: [String: Int], next: String?) {
        var reasons: [String: Int] = [:]
        var next: Date?
        let unsent = try await store.entries(matching: OutboxFilter(statuses: [.pending, .waitingToRetry, .inFlight]))
        for entry in unsent {
            let reason: String
            if let failure = entry.lastFailure {
                reason = "\(entry.status): \(failure.cause.name)" + (failure.httpStatus.map { ", HTTP \($0)" } ?? "")
                    + (failure.message.flatMap(Self.gist).map { ": \($0)" } ?? "")
            } else if !entry.dependencies.isEmpty {
                reason = "\(entry.status): waiting for a dependency"
            } else {
                reason = "\(entry.status): not attempted yet"
            }
            reasons[reason, default: 0] += 1
            if entry.status == .waitingToRetry { next = min(next ?? entry.nextAttemptAt, entry.nextAttemptAt) }
        }
        return (reasons, next.map { ISO8601DateFormatter().string(from: $0) })
    }

    /// A failure's message without what varies from entry to entry (a
    /// client's detail in parentheses), so equal failures group together;
    /// `nil` for an HTTP handler's message, which only repeats the status
    /// and the server's body.
    static func gist(of message: String) -> String? {
        guard !message.hasPrefix("HTTP ") else { return nil }
        var text = Substring(message)
        if let detail = text.range(of: " (") { text = text[..<detail.lowerBound] }
        return String(text.prefix(120))
    }
}
