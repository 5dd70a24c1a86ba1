import ArgumentParser
import Foundation
import IdempotencyKeyMiddleware
import SystemPackage

/// `outbox keys …`: an operator's view of a durable key store (`outbox serve`'s
/// `--keys-dir`), for keys whose outcome is unknown. The server must be
/// stopped: the store is open in one process at a time. With `--postgres
/// URL` the keys are in PostgreSQL, and the servers may keep running.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "List and resolve idempotency keys whose outcome is unknown (stop the server first).",
        subcommands: [KeysUnsettled.self, KeysResolve.self]
    )
}

struct KeysDirectoryOption: ParsableArguments {
    @Option(help: "The key store's directory (outbox serve's --keys-dir).")
    var keysDir: String = OutboxServe.defaultKeysDirectory

    @OptionGroup var postgres: PostgresOptions

    @Option(help: "With --postgres: a claim this old counts as abandoned by its server (outbox serve's --stale-after; default 60s, up to 100 years).", transform: DurationArgument.parse)
    var staleAfter: Duration = .seconds(60)

    func validate() throws {
        try OptionRange.require(staleAfter, "--stale-after", positive: true)
    }

    /// The store and how to close it.
    func open() async throws -> (store: any IdempotencyKeyStore, close: () async throws -> Void) {
        if let url = postgres.url {
            let session = try await PostgresSession.open(url: url, scope: postgres.postgresScope, staleAfter: staleAfter)
            return (session.keys, { await session.close() })
        }
        let keys = try await openStore()
        return (keys, { try await keys.close() })
    }

    private func openStore() async throws -> LogIdempotencyKeyStore {
        let path = URL(fileURLWithPath: keysDir).standardizedFileURL.path
        guard FileManager.default.fileExists(atPath: path) else {
            throw CommandFailure("no key store at \(path)", exitCode: CommandFailure.cannotOpen)
        }
        do {
            return try await LogIdempotencyKeyStore.open(at: FilePath(path))
        } catch {
            throw CommandFailure("cannot open the key store in \(path): \(error)", exitCode: CommandFailure.cannotOpen)
        }
    }
}

/// `outbox keys unsettled [--keys-dir DIR] [--json]`
struct KeysUnsettled: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unsettled", abstract: "List keys whose request ran (or may have) without a recorded response.")

    @OptionGroup var directory: KeysDirectoryOption
    @Flag(help: "One JSON object per line.")
    var json = false

    func run() async throws {
        let (store, close) = try await directory.open()
        let keys = try await store.unsettledKeys(now: Date(), limit: .max)
        try await close()
        for key in keys {
            if json {
                let object: [String: Any] = [
                    "key": key.key, "reason": key.reason.rawValue, "since": ISO8601DateFormatter().string(from: key.since),
                    "expiresAt": ISO8601DateFormatter().string(from: key.expiresAt),
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                StandardStreams.writeLine(String(decoding: data, as: UTF8.self))
            } else {
                StandardStreams.writeLine("\(key.key)\t\(key.reason.rawValue)\tsince \(key.since)\texpires \(key.expiresAt)")
            }
        }
        if !json { StandardStreams.writeLine("\(keys.count) key(s) with unknown outcome") }
    }
}

/// `outbox keys resolve KEY (--not-applied | --applied --status N [--body TEXT] [--content-type T]) [--retention 24h]`
struct KeysResolve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Resolve a key whose outcome is unknown: the write was not applied (the next request runs), or was (repeats get this answer).")

    @Argument(help: "The idempotency key.")
    var key: String
    @OptionGroup var directory: KeysDirectoryOption
    @Flag(help: "The write was not applied: forget the key, so the next request with it runs.")
    var notApplied = false
    @Flag(help: "The write was applied: answer repeats with --status/--body.")
    var applied = false
    @Option(help: "The status repeats get (with --applied; 200...499).")
    var status: Int?
    @Option(help: "The body repeats get (with --applied).")
    var body = ""
    @Option(help: "The Content-Type of that body.")
    var contentType = "application/json"
    @Option(help: "How long the resolved answer is kept (default 24h; up to 100 years).", transform: DurationArgument.parse)
    var retention: Duration = .seconds(24 * 3600)

    func validate() throws {
        guard applied != notApplied else { throw ValidationError("give exactly one of --applied and --not-applied") }
        try OptionRange.require(status, in: 200...499, "--status")
        if applied && status == nil { throw ValidationError("--applied needs --status in 200...499") }
        try OptionRange.require(retention, "--retention", positive: true)
    }

    func run() async throws {
        let (store, close) = try await directory.open()
        let now = Date()
        let resolution: IdempotencyResolution = notApplied
            ? .notApplied
            : .applied(
                StoredResponse(status: status ?? 200, headers: ["content-type": contentType], body: Array(body.utf8)),
                expiresAt: now.addingTimeInterval(Double(retention.components.seconds)))
        do {
            try await store.resolve(key: key, as: resolution, now: now)
            try await close()
        } catch {
            try? await close()
            throw CommandFailure("cannot resolve \(key): \(error)", exitCode: CommandFailure.operationFailed)
        }
        StandardStreams.writeLine(notApplied ? "resolved \(key): not applied (the next request runs)" : "resolved \(key): applied (repeats get \(status ?? 200))")
    }
}
