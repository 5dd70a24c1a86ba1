import ArgumentParser
import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import SystemPackage

/// `outbox serve [--port P] [--fault-rate R | --fault NAME=RATE …] [--keys-dir DIR | --in-memory-keys]`
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

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard (0...0.9).contains(faultRate) else { throw ValidationError("--fault-rate must be between 0 and 0.9") }
        if inMemoryKeys && keysDir != nil { throw ValidationError("--keys-dir and --in-memory-keys exclude each other") }
        if !faults.isEmpty && faultRate != 0 { throw ValidationError("--fault and --fault-rate exclude each other") }
        _ = try serverFaults()
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
        let injected = try serverFaults()
        let server = try await ReferenceServer.start(host: host, port: port, faults: injected, keyStore: store)
        let share = ServerFaults.Fault.allCases.reduce(0) { $0 + injected.rate(of: $1) }
        StandardStreams.writeLine(
            "listening on \(server.baseURL) (faults: \(Int((share * 100).rounded()))%; \(keysText)); GET /ledger shows what was applied")
        // Serve until the process is interrupted.
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
