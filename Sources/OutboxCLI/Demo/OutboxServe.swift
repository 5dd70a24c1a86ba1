import ArgumentParser
import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import SystemPackage

/// `outbox serve [--port P] [--fault-rate R] [--keys DIR]`
struct OutboxServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the reference Idempotency-Key server until interrupted.",
        discussion: """
            The demo's API (POST /albums, POST /albums/{id}/photos, PUT /posts/{id}/like, \
            POST /messages, GET /ledger) behind the Idempotency-Key middleware, optionally \
            with injected faults. Point `outbox drain --base-url` at it.
            """
    )

    @Option(help: "The port to listen on (0: any free port).")
    var port = 8080

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The share of write requests disturbed by faults (0 ... 0.9).")
    var faultRate = 0.0

    @Option(help: "Keep idempotency keys durably in this directory (default: in memory).")
    var keys: String?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard (0...0.9).contains(faultRate) else { throw ValidationError("--fault-rate must be between 0 and 0.9") }
    }

    func run() async throws {
        var store: (any IdempotencyKeyStore)?
        if let keys { store = try await LogIdempotencyKeyStore.open(at: FilePath(keys)) }
        let server = try await ReferenceServer.start(host: host, port: port, faults: .mixed(rate: faultRate), keyStore: store)
        StandardStreams.writeLine("listening on \(server.baseURL) (faults: \(Int(faultRate * 100))%); GET /ledger shows what was applied")
        // Serve until the process is interrupted.
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
