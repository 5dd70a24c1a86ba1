import ArgumentParser
import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import SystemPackage

/// `outbox serve [--port P] [--fault-rate R] [--keys-dir DIR | --in-memory-keys | --no-idempotency] …`
struct OutboxServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the reference Idempotency-Key server until interrupted.",
        discussion: """
            The demo's API (POST /albums, POST /albums/{id}/photos, PUT /posts/{id}/like, \
            POST /messages, GET /ledger) behind the Idempotency-Key middleware, optionally \
            with injected faults. Point `outbox drain --base-url` at it. Idempotency keys are \
            kept durably (a key journal in --keys-dir), so a retry after a server restart is \
            still answered with the stored response; --in-memory-keys forgets them on exit. \
            Durations take a unit: 90s, 15m, 24h, 7d (plain numbers are seconds).
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

    @Option(help: "Keep idempotency keys durably in this directory (default: ./\(defaultKeysDirectory)).")
    var keysDir: String?

    @Flag(help: "Keep idempotency keys in memory only, for throwaway runs: a retry after a restart runs again.")
    var inMemoryKeys = false

    @Flag(help: "Serve the API without the Idempotency-Key middleware (to measure its cost; retries apply twice).")
    var noIdempotency = false

    @Option(help: "How long a completed key is kept (default 24h).", transform: ServeDuration.parse)
    var retention: Duration = .seconds(24 * 3600)

    @Option(help: "The most keys kept at once; new keys past it get 503 + Retry-After until keys expire.")
    var maxKeys: Int?

    @Option(help: "The most bytes of key journal on disk; new keys past it get 503 + Retry-After.")
    var maxKeyBytes: Int64?

    @Option(help: "Close a connection idle this long (default 30s; 0: never).", transform: ServeDuration.parse)
    var idleTimeout: Duration = .seconds(30)

    @Option(help: "A request's head must arrive within this from its first byte (default 10s; 0: no limit).", transform: ServeDuration.parse)
    var headerTimeout: Duration = .seconds(10)

    @Option(help: "The most connections served at once (default: the open-file limit minus 64).")
    var maxConnections: Int?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard (0...0.9).contains(faultRate) else { throw ValidationError("--fault-rate must be between 0 and 0.9") }
        if [inMemoryKeys, keysDir != nil, noIdempotency].filter({ $0 }).count > 1 {
            throw ValidationError("--keys-dir, --in-memory-keys and --no-idempotency exclude each other")
        }
        guard retention > .zero else { throw ValidationError("--retention must be positive") }
        if let maxKeys, maxKeys < 1 { throw ValidationError("--max-keys must be positive") }
        if let maxKeyBytes, maxKeyBytes < 4096 { throw ValidationError("--max-key-bytes must be at least 4096") }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be positive") }
    }

    func run() async throws {
        let store: (any IdempotencyKeyStore)?
        let keysText: String
        if noIdempotency {
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
            let journal = try await LogIdempotencyKeyStore.open(at: FilePath(directory), configuration: configuration)
            store = journal
            keysText = "idempotency keys in \(directory), \(journal.count) loaded"
        }
        var middleware = IdempotencyMiddleware<ReferenceContext>.Configuration()
        middleware.retention = retention
        var connections = ConnectionLimits()
        connections.idleTimeout = idleTimeout > .zero ? idleTimeout : nil
        connections.requestHeadTimeout = headerTimeout > .zero ? headerTimeout : nil
        connections.maximumConnections = maxConnections
        let server = try await ReferenceServer.start(
            host: host, port: port, faults: .mixed(rate: faultRate), keyStore: store, middleware: middleware, connections: connections)
        StandardStreams.writeLine(
            "listening on \(server.baseURL) (faults: \(Int(faultRate * 100))%; \(keysText); "
                + "at most \(connections.effectiveMaximumConnections) connections); GET /ledger shows what was applied")
        // Serve until the process is interrupted.
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}

/// Durations on the command line: `90`, `90s`, `15m`, `24h`, `7d`, `500ms`.
enum ServeDuration {
    static func parse(_ text: String) throws -> Duration {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            if let value = Double(text.dropLast(suffix.count)), value >= 0, value.isFinite { return .milliseconds(Int64(value * scale * 1000)) }
        }
        if let value = Double(text), value >= 0, value.isFinite { return .milliseconds(Int64(value * 1000)) }
        throw ValidationError("'\(text)' is not a duration (use 90s, 15m, 24h, 7d)")
    }
}
