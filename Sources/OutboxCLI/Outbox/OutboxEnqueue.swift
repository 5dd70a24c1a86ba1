import ArgumentParser
import Foundation
import Outbox
import OutboxLog

/// `outbox enqueue DIR (--payload TEXT | --size BYTES) [--count N] [--batch K | --atomic] [--endpoint "POST /posts"]
/// [--user U] [--scope S] [--type T] [--id UUID] [--depends-on UUID…] [--json]`
struct OutboxEnqueue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Enqueue entries, directly or through a spool if another process holds the queue.",
        discussion: """
            A run of one batch is written into the user's queue directly if no other process \
            holds it (path "direct"); if one does (an app that keeps it open), into a spool of this \
            process's own beside it, which that process moves in (path "spooled"). A longer run \
            goes through spools (unless --depends-on is given: only the queue can check \
            dependencies), never holding the queue: the app keeps its queue meanwhile, \
            and this process keeps nothing per entry, so its memory stays bounded however long the \
            run; the queue's holder, or the next command that opens it, moves the entries in. Either \
            way the enqueue is durable when its line is printed: a printed entry survives a crash \
            or a power loss. The entries are written --batch at a time, each batch atomic and \
            printed as soon as it is durable, so a process killed meanwhile loses only the batch it \
            was writing; --atomic writes them all as one batch (all or nothing, printed at the end). Each entry is printed as "<id> <idempotency-key> <path>" on its own \
            line (with --json, one object per entry: id, idempotencyKey, path, outcome); an entry \
            the queue already held prints "<id> - direct". \
            --payload sends the text as given (with Content-Type: application/json if it is valid \
            JSON). With --size instead, entry i (from 0) gets a payload of exactly --size bytes: \
            when --size is at least the length of {"n":<i>,"pad":""}, that JSON object with "pad" \
            filled with "x" up to --size bytes, sent as JSON; a smaller --size gives the text \
            "<i>." repeated and cut to --size bytes (no Content-Type). Creates DIR and the user's \
            queue if missing.
            """
    )

    @OptionGroup var options: OutboxRootOptions

    @Option(help: "How many entries to enqueue (1...\(OptionRange.maximumCount); a batch's payloads together at most 1 GiB).")
    var count = 1

    @Option(help: "How many entries go in each atomic batch, printed once it is durable (1...\(OptionRange.maximumCount); default \(defaultBatch)).")
    var batch: Int?

    @Flag(help: "Write every entry in one atomic batch: all or nothing, printed at the end.")
    var atomic = false

    static let defaultBatch = 256

    /// Entries per batch: all of them with --atomic.
    var batchSize: Int { atomic ? count : min(count, batch ?? Self.defaultBatch) }

    @Option(help: "The payload size of each entry, in bytes (generated payloads; see below).")
    var size: Int?

    @Option(help: "The payload of each entry, as text.")
    var payload: String?

    @Option(help: "The request: an HTTP method, one space and a path starting with /.")
    var endpoint = "POST /posts"

    @Option(help: "The user (partition) whose queue receives the entries.")
    var user = "default"

    @Option(help: "Entries with the same scope are sent one at a time, in order (default: none).")
    var scope: String?

    @Option(help: "The entries' type: which handler delivers them.")
    var type = "post"

    @Option(help: "The entry's id (a UUID; with --count 1): enqueueing the same id again is a duplicate.")
    var id: String?

    @Option(name: .customLong("depends-on"), help: "An entry (UUID) that must be delivered first; repeatable.")
    var dependencies: [String] = []

    @Flag(help: "Print one JSON object per entry.")
    var json = false

    func validate() throws {
        try OptionRange.require(count, in: 1...OptionRange.maximumCount, "--count")
        guard (size == nil) != (payload == nil) else { throw ValidationError("give exactly one of --payload and --size") }
        if let size, size < 0 { throw ValidationError("--size must not be negative, not \(size)") }
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        guard !type.isEmpty else { throw ValidationError("--type must not be empty") }
        if scope?.isEmpty == true { throw ValidationError("--scope must not be empty") }
        if let id {
            guard UUID(uuidString: id) != nil else { throw ValidationError("--id \(id) is not a UUID") }
            guard count == 1 else { throw ValidationError("--id needs --count 1") }
        }
        for dependency in dependencies where UUID(uuidString: dependency) == nil {
            throw ValidationError("--depends-on \(dependency) is not a UUID")
        }
        let request = try Self.parseEndpoint(endpoint)
        let maximum = Self.maximumPayloadSize(
            strings: [request.method, request.path, user, type, scope ?? "", Self.jsonHeaders.description])
        let largest = size ?? payload?.utf8.count ?? 0
        guard largest <= maximum else {
            throw ValidationError("the payload (\(largest) bytes) is too large: an entry holds at most about \(maximum) payload bytes")
        }
        try OptionRange.require(batch, in: 1...OptionRange.maximumCount, "--batch")
        if atomic && batch != nil { throw ValidationError("--batch and --atomic exclude each other") }
        // A batch is built in memory before it is written.
        try OptionRange.requireInMemory(
            count: batchSize, size: largest,
            atomic ? "the entries' payloads (--count × the payload size)" : "a batch's payloads (--batch × the payload size)")
    }

    /// One printed entry (`--json`).
    struct Printed: Encodable {
        var id: String
        var idempotencyKey: String?
        var path: OutboxEnqueuePath
        /// enqueued, coalesced, duplicate or spooled.
        var outcome: String
    }

    func run() async throws {
        let (method, path) = try Self.parseEndpoint(endpoint)
        let fixedID = id.flatMap { OutboxEntry.ID($0) }
        let dependencies = dependencies.compactMap { OutboxEntry.ID($0) }
        let encoder = JSONLines()
        try await BatchedEnqueue(options: options, user: user).run(
            count: count, batch: batchSize, dependencies: !dependencies.isEmpty
        ) { range in
            range.map { index in
                let (body, isJSON): ([UInt8], Bool) =
                    if let payload { (Array(payload.utf8), Self.isJSON(payload)) } else { Self.payload(index: index, size: size ?? 0) }
                return OutboxEnqueueRequest(
                    id: fixedID ?? OutboxEntry.ID(), type: type, method: method, endpoint: path, payload: body,
                    headers: isJSON ? Self.jsonHeaders : [:], scope: scope, dependencies: dependencies)
            }
        } acknowledge: { result in
            // One write per batch, as soon as it is durable.
            var text = ""
            for line in Self.printed(result) {
                text += json ? try encoder.encode(line) : "\(line.id) \(line.idempotencyKey ?? "-") \(line.path.rawValue)"
                text += "\n"
            }
            StandardStreams.write(text)
        }
    }

    /// What to print for each entry of `result`, in order.
    static func printed(_ result: OutboxSharedEnqueueResult) -> [Printed] {
        switch result {
        case .spooled(let entries):
            return entries.map { Printed(id: "\($0.id)", idempotencyKey: $0.idempotencyKey, path: .spooled, outcome: "spooled") }
        case .direct(let results):
            return results.map { result in
                switch result {
                case .enqueued(let entry):
                    Printed(id: "\(entry.id)", idempotencyKey: entry.idempotencyKey, path: .direct, outcome: "enqueued")
                case .coalesced(let entry, _):
                    Printed(id: "\(entry.id)", idempotencyKey: entry.idempotencyKey, path: .direct, outcome: "coalesced")
                case .duplicate(let id, _):
                    Printed(id: "\(id)", idempotencyKey: nil, path: .direct, outcome: "duplicate")
                }
            }
        }
    }

    static func isJSON(_ text: String) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil
    }

    static let jsonHeaders = ["Content-Type": "application/json"]

    /// `"METHOD /path"`: the method (letters, upper-cased) and the path.
    static func parseEndpoint(_ text: String) throws(ValidationError) -> (method: String, path: String) {
        let parts = text.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let method = parts.first, let path = parts.last,
            !method.isEmpty, method.allSatisfy({ $0.isASCII && $0.isLetter }),
            path.hasPrefix("/"), !path.contains(where: { $0.isWhitespace })
        else {
            throw ValidationError("--endpoint \"\(text)\" is not \"METHOD /path\" (for example \"POST /posts\")")
        }
        return (method.uppercased(), String(path))
    }

    /// Entry `index`'s payload of exactly `size` bytes, and whether it is JSON:
    /// `{"n":<index>,"pad":"xx…"}` when it fits, else `"<index>."` repeated
    /// and cut to `size`.
    static func payload(index: Int, size: Int) -> (bytes: [UInt8], isJSON: Bool) {
        let prefix = Array("{\"n\":\(index),\"pad\":\"".utf8)
        let suffix = Array("\"}".utf8)
        let padding = size - prefix.count - suffix.count
        if padding >= 0 {
            return (prefix + [UInt8](repeating: UInt8(ascii: "x"), count: padding) + suffix, true)
        }
        let unit = Array("\(index).".utf8)
        return ((0..<size).map { unit[$0 % unit.count] }, false)
    }

    /// The largest payload an entry can carry in one log record with these
    /// strings: the log's record limit, minus the record frame and the
    /// entry's fixed fields (a generous estimate), minus the strings.
    static func maximumPayloadSize(strings: [String]) -> Int {
        let frame = LogWrite.value(LogKey(String(repeating: "E", count: 17)), []).frameSize
        let fixedFields = 256
        let text = strings.reduce(0) { $0 + $1.utf8.count + 4 }
        return OutboxStoreConfiguration().log.maximumRecordSize - frame - fixedFields - text
    }
}
