import Foundation
import IdempotencyKeyMiddleware
import Outbox
import OutboxLog
import OutboxQueue
import SystemPackage

/// Every command of the `outbox` tool, every option and positional argument
/// it takes and how it takes its value, and a command line that runs it
/// cleanly: the table the numeric-options property test drives.
///
/// `--experimental-dump-help` names each option but not its type, so the
/// types are listed here; the test fails when the tool has an option (or a
/// command) this table does not classify, or the table one the tool lacks.
enum CommandLineOptionTable {
    /// How an option takes its value.
    enum Kind: Sendable, Equatable {
        /// Text: a path, a name, a URL, a list of names.
        case text
        /// An integer (`Int`, `Int64`, `UInt64`).
        case integer
        /// A floating-point number.
        case real
        /// A duration: `90s`, `15m`, plain numbers in the option's unit.
        case duration
        /// `NAME=RATE`: the rate is the number (`serve --fault`).
        case namedRate(name: String)

        var isNumeric: Bool { self != .text }

        /// `number` as this option's value.
        func value(_ number: String) -> String {
            if case .namedRate(let name) = self { return "\(name)=\(number)" }
            return number
        }
    }

    /// What a case's command line may use.
    struct Fixture: Sendable {
        /// A new directory for this case alone.
        var scratch: String
        /// A running `outbox serve` the workers can deliver to.
        var serverURL: String
    }

    /// One command: its options and a clean command line.
    struct Command: Sendable {
        /// Each option (`--count`) and positional (`<directory>`) with its kind.
        var options: [String: Kind]
        /// The command words, positionals and flags of a line that exits 0
        /// or keeps running (a server, a long job) in a prepared fixture.
        var words: @Sendable (Fixture) -> [String] = { _ in [] }
        /// Its options, each replaced by the option under test.
        var settings: @Sendable (Fixture) -> [(String, String)] = { _ in [] }
        /// Creates what the line needs in `fixture.scratch`.
        var prepare: @Sendable (Fixture) async throws -> Void = { _ in }
        /// Exit statuses besides 0 and 64 that a valid value may cause, and
        /// why: the command's ordinary failures, never a crash.
        var ordinaryExits: [Int32: String] = [:]

        /// The line with `option` set to `value` (as `--option=value`, so a
        /// value starting with `-` is read as a value).
        func line(_ fixture: Fixture, setting option: String, to value: String) -> [String] {
            words(fixture) + settings(fixture).filter { $0.0 != option }.map { "\($0.0)=\($0.1)" } + ["\(option)=\(value)"]
        }
    }

    /// Commands without numeric options: only their options are classified.
    private static func textOnly(_ names: String...) -> Command {
        Command(options: Dictionary(uniqueKeysWithValues: names.map { ($0, Kind.text) }))
    }

    /// The options of every command under `outbox DIR` (`OutboxRootOptions`).
    private static let root: [String: Kind] = ["<directory>": .text, "--key-file": .text]

    /// Every command, by its words after `outbox`.
    static let commands: [String: Command] = [
        "": textOnly(),
        "help": textOnly("<subcommands>"),
        "log": textOnly(),
        "log append": Command(
            options: [
                "<directory>": .text, "--count": .integer, "--size": .integer, "--durability": .text, "--key-prefix": .text,
                "--segment-size": .integer, "--batch": .integer, "--expires-at-ms": .integer,
            ],
            words: { ["log", "append", "\($0.scratch)/log", "--create"] },
            settings: { _ in [("--count", "2"), ("--size", "8"), ("--durability", "buffered")] },
            ordinaryExits: [1: "an --expires-at-ms beyond what the log stores (±10^15 ms) is refused, writing nothing"]),
        "log remove-expired": Command(
            options: ["<directory>": .text, "--now-ms": .integer],
            words: { ["log", "remove-expired", "\($0.scratch)/log"] },
            prepare: { fixture in
                let log = try await OutboxLog.open(at: FilePath("\(fixture.scratch)/log"))
                try await log.put("k", [1], expiresAt: Date(timeIntervalSince1970: 1), durability: .durable)
                try await log.close()
            }),
        "queue": textOnly(),
        "queue append": Command(
            options: ["<directory>": .text, "<elements>": .text, "--durability": .text, "--segment-size": .integer],
            words: { ["queue", "append", "\($0.scratch)/queue", "--create", "element"] }),
        "queue consume": Command(
            options: ["<directory>": .text, "--consumer": .text, "--max": .integer, "--start": .text],
            words: { ["queue", "consume", "\($0.scratch)/queue", "--consumer", "c"] },
            prepare: { try await queueWithOneElement(in: "\($0.scratch)/queue") }),
        "queue relay": textOnly("<directory>", "--consumer", "--durability", "--start"),
        "queue commit": Command(
            options: ["<directory>": .text, "--consumer": .text, "--through": .integer],
            words: { ["queue", "commit", "\($0.scratch)/queue", "--consumer", "c"] },
            settings: { _ in [("--through", "1")] },
            prepare: { try await queueWithOneElement(in: "\($0.scratch)/queue") }),
        "queue stats": textOnly("<directory>"),
        "queue trim": Command(
            options: ["<directory>": .text, "--max-age": .duration, "--max-bytes": .integer, "--held-by": .text],
            words: { ["queue", "trim", "\($0.scratch)/queue"] },
            prepare: { try await queueWithOneElement(in: "\($0.scratch)/queue") }),
        "queue remove-consumer": textOnly("<directory>", "--consumer"),
        "log verify": textOnly("<directory>"),
        "log dump": textOnly("<directory>"),
        "log compact": textOnly("<directory>"),
        "log stats": textOnly("<directory>"),
        "log make-vectors": textOnly("<directory>", "--only"),
        "log make-store-vectors": textOnly("<directory>"),
        "enqueue": Command(
            options: root.merging([
                "--count": .integer, "--size": .integer, "--payload": .text, "--endpoint": .text, "--user": .text,
                "--scope": .text, "--type": .text, "--id": .text, "--depends-on": .text, "--batch": .integer,
            ]) { $1 },
            words: { ["enqueue", "\($0.scratch)/root"] },
            settings: { _ in [("--size", "8")] }),
        "list": Command(options: root.merging(["--user": .text, "--status": .text]) { $1 }),
        "stats": Command(options: root.merging(["--user": .text]) { $1 }),
        "explain": Command(options: root.merging(["<id>": .text, "--user": .text]) { $1 }),
        "top": Command(
            options: root.merging(["--user": .text, "--interval": .real, "--count": .integer]) { $1 },
            words: { ["top", "\($0.scratch)/root"] },
            settings: { _ in [("--count", "1"), ("--interval", "0.1")] },
            prepare: { try await LogOutboxStore.open(root: "\($0.scratch)/root", partition: "default").close() }),
        "inspect": Command(
            options: root.merging(["--user": .text, "--port": .integer]) { $1 },
            // It ends with this test process, whatever happens to the test.
            words: { ["inspect", "--debug-exit-with-parent", "\($0.scratch)/root"] },
            settings: { _ in [("--port", "0")] },
            prepare: { try await LogOutboxStore.open(root: "\($0.scratch)/root", partition: "default").close() }),
        "purge": Command(options: root.merging(["--user": .text]) { $1 }),
        "rekey": Command(options: root.merging(["--user": .text, "--new-key-file": .text, "--kill-self-at": .text]) { $1 }),
        "drain": Command(
            options: root.merging([
                "--base-url": .text, "--user": .text, "--token": .text, "--timeout": .duration, "--concurrency": .integer,
                "--key-retention": .duration, "--in-progress-budget": .duration, "--unscoped-delivery": .text,
                "--snapshot-interval": .duration,
            ]) { $1 },
            words: { ["drain", "\($0.scratch)/root"] },
            // An empty queue: drain opens it, builds its dispatcher and has nothing to send.
            settings: { _ in [("--base-url", "http://127.0.0.1:9")] },
            prepare: { try await LogOutboxStore.open(root: "\($0.scratch)/root", partition: "default").close() }),
        "demo": Command(
            options: [
                "--count": .integer, "--fault-rate": .real, "--seed": .integer, "--deadline": .duration, "--servers": .integer,
                "--postgres": .text, "--directory": .text, "--latency": .duration,
            ],
            words: { ["demo", "--directory", "\($0.scratch)/demo"] },
            settings: { _ in [("--count", "10"), ("--fault-rate", "0")] },
            ordinaryExits: [1: "a valid --deadline too short for the day: the demo did not finish"]),
        "serve": Command(
            options: [
                "--port": .integer, "--host": .text, "--fault-rate": .real, "--fault": .namedRate(name: "dropAfterApply"),
                "--seed": .integer, "--keys-dir": .text, "--postgres": .text, "--postgres-scope": .text, "--stale-after": .duration,
                "--debug-hold-writes": .duration, "--retention": .duration, "--max-keys": .integer, "--max-key-bytes": .integer,
                "--idle-timeout": .duration, "--header-timeout": .duration, "--body-timeout": .duration,
                "--min-body-rate": .integer, "--max-connections": .integer, "--latency": .duration, "--jitter": .duration,
            ],
            // It ends with this test process, whatever happens to the test.
            words: { ["serve", "--debug-exit-with-parent", "--keys-dir", "\($0.scratch)/keys"] },
            settings: { _ in [("--port", "0")] }),
        "keys": textOnly(),
        "keys unsettled": Command(
            options: keys,
            words: { _ in ["keys", "unsettled"] },
            settings: { [("--keys-dir", "\($0.scratch)/keys")] },
            prepare: { try await unsettledKey(in: "\($0.scratch)/keys") }),
        "keys resolve": Command(
            options: keys.merging([
                "<key>": .text, "--status": .integer, "--body": .text, "--content-type": .text, "--retention": .duration,
            ]) { $1 },
            words: { _ in ["keys", "resolve", unsettledKeyName, "--applied"] },
            settings: { [("--keys-dir", "\($0.scratch)/keys"), ("--status", "200")] },
            prepare: { try await unsettledKey(in: "\($0.scratch)/keys") }),
        "torture": Command(
            options: [
                "--seconds": .duration, "--cycles": .integer, "--seed": .integer, "--dir": .text, "--mode": .text,
                "--first-cycle": .integer, "--worker": .text,
            ],
            words: { ["torture", "--dir", "\($0.scratch)/torture"] },
            settings: { _ in [("--mode", "powerloss"), ("--cycles", "1"), ("--seed", "1")] }),
        "torture-worker": textOnly(),
        "torture-worker log": Command(
            options: ["--directory": .text, "--seed": .integer, "--stream": .integer, "--count": .integer],
            words: { ["torture-worker", "log", "--directory", "\($0.scratch)/log"] },
            settings: { _ in [("--seed", "1"), ("--stream", "1"), ("--count", "5")] }),
        "torture-worker outbox": Command(
            options: ["--root": .text, "--base-url": .text, "--seed": .integer, "--cycle": .integer, "--count": .integer],
            words: { ["torture-worker", "outbox", "--root", "\($0.scratch)/root", "--base-url", $0.serverURL] },
            settings: { _ in [("--seed", "1"), ("--cycle", "0"), ("--count", "2")] }),
        "torture-worker queue": Command(
            options: ["--directory": .text, "--seed": .integer, "--cycle": .integer, "--count": .integer],
            words: { ["torture-worker", "queue", "--directory", "\($0.scratch)/queue"] },
            settings: { _ in [("--seed", "1"), ("--cycle", "0"), ("--count", "2")] }),
        "torture-worker spool-owner": textOnly("--root", "--base-url", "--key-file"),
        "torture-worker payload": Command(
            options: [
                "--root": .text, "--base-url": .text, "--seed": .integer, "--cycle": .integer, "--count": .integer,
                "--kill-at": .text, "--kill-occurrence": .integer,
            ],
            words: { ["torture-worker", "payload", "--root", "\($0.scratch)/root", "--base-url", $0.serverURL] },
            settings: { _ in [("--seed", "1"), ("--cycle", "0"), ("--count", "1")] }),
    ]

    /// The options of `outbox keys unsettled` and `resolve` (`KeysDirectoryOption`).
    private static let keys: [String: Kind] = [
        "--keys-dir": .text, "--postgres": .text, "--postgres-scope": .text, "--stale-after": .duration,
    ]

    /// A queue in `directory` holding one element, at position 1, and a
    /// consumer `c` at the oldest.
    static func queueWithOneElement(in directory: String) async throws {
        let queue = try await DurableQueue.open(at: directory)
        try await queue.append([1], durability: .durable)
        _ = try await queue.consumer(named: "c")
        try await queue.close()
    }

    static let unsettledKeyName = "numbers-unsettled"

    /// A durable key store in `directory` holding one key whose outcome is
    /// unknown (claimed by a server that never answered), for `keys resolve`.
    static func unsettledKey(in directory: String) async throws {
        let store = try await LogIdempotencyKeyStore.open(at: directory)
        let claim = IdempotencyClaim(owner: "gone", staleAfter: .seconds(60), expiresAt: Date().addingTimeInterval(86_400))
        _ = try await store.begin(key: unsettledKeyName, fingerprint: [1], now: Date(), claim: claim)
        try await store.close()
    }
}
