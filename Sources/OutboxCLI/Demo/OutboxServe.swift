import ArgumentParser
import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import SystemPackage

/// `outbox serve [--port P] [--fault-rate R] [--keys-dir DIR | --in-memory-keys]`
struct OutboxServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the reference Idempotency-Key server until interrupted.",
        discussion: """
            The demo's API behind the Idempotency-Key middleware, optionally with injected faults. \
            Point `outbox drain --base-url`, or README.md's app sample, at it. Every write \
            needs an Idempotency-Key header; bodies are JSON.

              POST /albums                                {"title"}                  → 201 {"id": "alb-N"}
              POST /albums/{album}/photos                 {"caption", "album"}       → 201 {"id": "ph-N"}
              PUT  /posts/{post}/like                     {"liked"}                  → 200 {"id", "liked"}
              POST /messages                              {"conversation", "text"}   → 201 {"id": "msg-N"}
              POST /conversations/{conversation}/messages {"conversationID", "body"} → 201 {"id": "msg-N"}
              GET  /ledger                                what was applied, by idempotency key

            A 422 answers an unknown album, a message without a body or naming another \
            conversation, and any message containing #reject. Idempotency keys are kept \
            durably (an OutboxLog in --keys-dir), so a retry after a server restart is \
            still answered with the stored response; --in-memory-keys forgets them on exit.
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

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard (0...0.9).contains(faultRate) else { throw ValidationError("--fault-rate must be between 0 and 0.9") }
        if inMemoryKeys && keysDir != nil { throw ValidationError("--keys-dir and --in-memory-keys exclude each other") }
    }

    func run() async throws {
        let store: any IdempotencyKeyStore
        let keysText: String
        if inMemoryKeys {
            store = InMemoryIdempotencyKeyStore()
            keysText = "idempotency keys in memory (forgotten on exit)"
        } else {
            let directory = URL(fileURLWithPath: keysDir ?? Self.defaultKeysDirectory).standardizedFileURL.path
            store = try await LogIdempotencyKeyStore.open(at: FilePath(directory))
            keysText = "idempotency keys in \(directory)"
        }
        let server = try await ReferenceServer.start(host: host, port: port, faults: .mixed(rate: faultRate), keyStore: store)
        StandardStreams.writeLine(
            "listening on \(server.baseURL) (faults: \(Int(faultRate * 100))%; \(keysText)); GET /ledger shows what was applied")
        // Serve until the process is interrupted.
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
