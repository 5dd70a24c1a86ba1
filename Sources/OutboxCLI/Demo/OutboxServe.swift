import ArgumentParser
import Foundation
import IdempotencyKeyMiddleware
import IdempotencyKeyPostgres
import Logging
import OutboxReferenceServer
import SystemPackage

/// `outbox serve [--port P] [--fault-rate R | --fault NAME=RATE …] [--keys-dir DIR | --in-memory-keys | --no-idempotency | --postgres URL] …`
struct OutboxServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the reference Idempotency-Key server until interrupted.",
        discussion: """
            The demo's API behind the Idempotency-Key middleware, optionally with injected faults. \
            Point `outbox drain --base-url`, or README.md's app sample, at it. Every write \
            needs an Idempotency-Key header; bodies are JSON.

            Faults: --fault-rate R disturbs that share of writes with 503s, 429s, answers held \
            past the client's timeout, connections dropped after apply, slow answers and slow \
            applies, and connection-level faults — closed before any response, reset (RST) after \
            apply, half-open (applied, never answered), idle keep-alive connections closed by the \
            server, and 303 See Other after apply. --fault NAME=RATE (repeatable) injects chosen \
            faults instead.

              POST /albums                                {"title"}                  → 201 {"id": "alb-N"}
              POST /albums/{album}/photos                 {"caption", "album"}       → 201 {"id": "ph-N"}
              PUT  /posts/{post}/like                     {"liked"}                  → 200 {"id", "liked"}
              POST /messages                              {"conversation", "text"}   → 201 {"id": "msg-N"}
              POST /conversations/{conversation}/messages {"conversationID", "body"} → 201 {"id": "msg-N"}
              GET  /ledger                                what was applied, by idempotency key

            A 422 answers an unknown album, a message without a body or naming another \
            conversation, and any message containing #reject. Idempotency keys are kept \
            durably (a key store in --keys-dir), so a retry after a server restart is \
            still answered with the stored response; --in-memory-keys forgets them on exit. \
            With --postgres URL, keys and the API's writes are in that PostgreSQL database \
            instead, so several servers on it (other ports, other machines) answer as one: \
            a retry that lands on another server finds its key.

            Connections are limited: closed when idle (--idle-timeout), when a request's head \
            is not in by --header-timeout from the accept, or its body by --body-timeout from \
            the head plus a second per --min-body-rate bytes received (answered 408), and at \
            most --max-connections are served at once (the rest wait to be accepted). \
            Durations take a unit: 500ms, 90s, 15m, 24h, 7d (plain numbers are seconds), \
            from 0 to \(DurationArgument.maximumText); NaN, infinities and negative values are refused.

            --latency delays every request (a network's round trip, --jitter varying it), so a \
            drain against the server shows what its --concurrency is worth.
            """
    )

    /// Where keys live when neither `--keys-dir` nor `--in-memory-keys` is given.
    static let defaultKeysDirectory = "outbox-serve-keys"

    @Option(help: "The port to listen on (0: any free port).")
    var port = 8080

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The share of write requests disturbed by faults (0 ... 0.9).")
    var faultRate = 0.0

    @Option(
        name: .customLong("fault"),
        help: ArgumentHelp(
            "One fault and its share of write requests, e.g. dropAfterApply=0.05 (repeatable; replaces --fault-rate's mix).",
            discussion: "Faults: \(ServerFaults.Fault.allCases.map(\.rawValue).joined(separator: ", ")).",
            valueName: "name=rate"))
    var faults: [String] = []

    @Option(help: "Seeds the fault draws.")
    var seed: UInt64 = 1

    /// The faults to inject: `--fault` entries if any, else `--fault-rate`'s mix.
    func serverFaults() throws -> ServerFaults {
        guard !faults.isEmpty else { return .mixed(rate: faultRate, seed: seed) }
        var result = ServerFaults()
        result.seed = seed
        var total = 0.0
        for item in faults {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let fault = ServerFaults.Fault(rawValue: parts[0]), let rate = Double(parts[1]),
                (0...0.9).contains(rate)
            else {
                throw ValidationError(
                    "--fault must be NAME=RATE with RATE in 0...0.9 and NAME one of "
                        + ServerFaults.Fault.allCases.map(\.rawValue).joined(separator: ", ") + ", not \"\(item)\"")
            }
            result.set(fault, to: rate)
            total += rate
        }
        guard total <= 0.9 else { throw ValidationError("the --fault rates add up to \(total); at most 0.9") }
        return result
    }

    @Option(help: "Keep idempotency keys durably in this directory (default: ./\(defaultKeysDirectory)).")
    var keysDir: String?

    @Flag(help: "Keep idempotency keys in memory only, for throwaway runs: a retry after a restart runs again.")
    var inMemoryKeys = false

    @Flag(help: "Serve the API without the Idempotency-Key middleware (to measure its cost; retries apply twice).")
    var noIdempotency = false

    @OptionGroup var postgres: PostgresOptions

    @Option(
        help: "A request another server claimed is answered 409 until its claim is this old, then outcome unknown (default 60s).",
        transform: DurationArgument.parse)
    var staleAfter: Duration = .seconds(60)

    /// For tests: every write is held this long behind the middleware (its
    /// key claimed) before it is applied, so a test can kill the server
    /// mid-request or race a second server. It prints "debug: a write is
    /// held, its key claimed" when one starts being held, for the test to
    /// act on then.
    @Option(name: .customLong("debug-hold-writes"), help: .hidden, transform: DurationArgument.parse)
    var holdWrites: Duration?

    /// For child processes (the demo's servers): exit once the process
    /// that started this one is gone, so none is left behind.
    @Flag(name: .customLong("debug-exit-with-parent"), help: .hidden)
    var exitWithParent = false

    @Option(help: "How long a completed key is kept (default 24h).", transform: DurationArgument.parse)
    var retention: Duration = .seconds(24 * 3600)

    @Option(help: "The most keys kept at once; new keys past it get 503 + Retry-After until keys expire.")
    var maxKeys: Int?

    @Option(help: "The most bytes of the key store's log on disk; new keys past it get 503 + Retry-After.")
    var maxKeyBytes: Int64?

    @Option(help: "Close a connection idle this long (default 30s; 0: never).", transform: DurationArgument.parse)
    var idleTimeout: Duration = .seconds(30)

    @Option(help: "A request's head must arrive within this: from the accept, or for a later request on the connection from its first byte (default 10s; 0: no limit).", transform: DurationArgument.parse)
    var headerTimeout: Duration = .seconds(10)

    @Option(
        help: "A request's body must arrive within this from its head, plus a second for every --min-body-rate bytes received; else 408 (default 30s; 0: no limit).",
        transform: DurationArgument.parse)
    var bodyTimeout: Duration = .seconds(30)

    @Option(help: "Bytes a second of body that earn one more second of --body-timeout (0: --body-timeout is for the whole body).")
    var minBodyRate = 1024

    @Option(help: "The most connections served at once (default: the open-file limit minus 64).")
    var maxConnections: Int?

    @Option(help: "Delay every request this long before handling it, a network's round trip (default 0; e.g. 50ms).", transform: DurationArgument.parse)
    var latency: Duration = .zero

    @Option(help: "Vary each request's --latency by up to this much either way, uniformly (default 0).", transform: DurationArgument.parse)
    var jitter: Duration = .zero

    func validate() throws {
        try OptionRange.require(port, in: 0...65535, "--port")
        try OptionRange.require(faultRate, in: 0...0.9, "--fault-rate")
        if [inMemoryKeys, keysDir != nil, noIdempotency, postgres.url != nil].filter({ $0 }).count > 1 {
            throw ValidationError("--keys-dir, --in-memory-keys, --no-idempotency and --postgres exclude each other")
        }
        try OptionRange.require(staleAfter, "--stale-after", positive: true)
        if let holdWrites { try OptionRange.require(holdWrites, "--debug-hold-writes", positive: false) }
        if !faults.isEmpty && faultRate != 0 { throw ValidationError("--fault and --fault-rate exclude each other") }
        _ = try serverFaults()
        try OptionRange.require(retention, "--retention", positive: true)
        try OptionRange.require(idleTimeout, "--idle-timeout", positive: false)
        try OptionRange.require(headerTimeout, "--header-timeout", positive: false)
        try OptionRange.require(bodyTimeout, "--body-timeout", positive: false)
        try OptionRange.require(minBodyRate, in: 0...Int.max, "--min-body-rate")
        try OptionRange.require(maxKeys, in: 1...Int.max, "--max-keys")
        try OptionRange.require(maxKeyBytes, in: 4096...Int64.max, "--max-key-bytes")
        try OptionRange.require(maxConnections, in: 1...Int.max, "--max-connections")
        try OptionRange.require(latency, "--latency", positive: false)
        try OptionRange.require(jitter, "--jitter", positive: false)
    }

    func run() async throws {
        let store: (any IdempotencyKeyStore)?
        let keysText: String
        var writes: (any ReferenceWrites)?
        if let url = postgres.url {
            let session = try await PostgresSession.open(url: url, scope: postgres.postgresScope, staleAfter: staleAfter)
            try await PostgresReferenceWrites.prepare(client: session.client, logger: PostgresSession.quietLogger)
            writes = PostgresReferenceWrites(
                client: session.client, keys: session.keys, scope: postgres.postgresScope, owner: IdempotencyServerInstance.current,
                retention: retention, logger: PostgresSession.quietLogger)
            store = session.keys
            keysText = "idempotency keys and writes in PostgreSQL (scope \(postgres.postgresScope))"
        } else if noIdempotency {
            store = nil
            keysText = "no Idempotency-Key middleware"
        } else if inMemoryKeys {
            store = InMemoryIdempotencyKeyStore(maximumKeys: maxKeys)
            keysText = "idempotency keys in memory (forgotten on exit)"
        } else {
            let directory = URL(fileURLWithPath: keysDir ?? Self.defaultKeysDirectory).standardizedFileURL.path
            var configuration = LogIdempotencyKeyStore.Configuration()
            configuration.maximumKeys = maxKeys
            configuration.maximumBytes = maxKeyBytes
            let keys = try await LogIdempotencyKeyStore.open(at: FilePath(directory), configuration: configuration)
            store = keys
            keysText = "idempotency keys in \(directory), \(keys.count) loaded"
        }
        var middleware = IdempotencyMiddleware<ReferenceContext>.Configuration()
        middleware.retention = retention
        middleware.staleAfter = staleAfter
        var connections = ConnectionLimits()
        connections.idleTimeout = idleTimeout > .zero ? idleTimeout : nil
        connections.requestHeadTimeout = headerTimeout > .zero ? headerTimeout : nil
        connections.requestBodyTimeout = bodyTimeout > .zero ? bodyTimeout : nil
        connections.minimumBodyRate = minBodyRate > 0 ? minBodyRate : nil
        connections.maximumConnections = maxConnections
        var injected = try serverFaults()
        if let holdWrites {
            injected.slowApply = 1
            injected.slowApplyDelay = holdWrites
        }
        let server = try await ReferenceServer.start(
            host: host, port: port, faults: injected, keyStore: store, middleware: middleware, connections: connections, writes: writes,
            latency: latency > .zero || jitter > .zero ? ServerLatency(base: latency, jitter: jitter) : nil)
        let share = ServerFaults.Fault.allCases.reduce(0) { $0 + injected.rate(of: $1) }
        StandardStreams.writeLine(
            "listening on \(server.baseURL) (faults: \(Int((share * 100).rounded()))%; \(keysText); "
                + "at most \(connections.effectiveMaximumConnections) connections"
                + (latency > .zero || jitter > .zero ? "; latency \(latency) ± \(jitter)" : "")
                + "); GET /ledger shows what was applied")
        if holdWrites != nil {
            Task {
                while true {
                    await server.waitForActivity { $0.slowAppliesHeld > 0 }
                    StandardStreams.writeLine("debug: a write is held, its key claimed")
                    await server.waitForActivity { $0.slowAppliesHeld == 0 }
                }
            }
        }
        // Serve until the process is interrupted (or, for a child, orphaned).
        let parent = getppid()
        while true {
            try await Task.sleep(for: .milliseconds(exitWithParent ? 250 : 3_600_000))
            if exitWithParent && getppid() != parent { Foundation.exit(0) }
        }
    }
}
